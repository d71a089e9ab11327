"""Which framework a set of inputs belongs to, decided by the primary file through the registry.

When nothing names a framework but the inputs clearly launch a training run (a launcher hands a
script flags, or runs a script nobody gave us), the answer is a best-effort guess, `pytorch` (the
reader of the inputs' own code and settings), that the plan states loudly: a plan an agent can
check and complete is worth more than a refusal that drops every setting the inputs state."""

import re
from dataclasses import dataclass

from mint_migrate.analyze.evidence import Loc
from mint_migrate.analyze.inputs import InputFile, Project
from mint_migrate.analyze.pycommon import algorithm_in_name
from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.registry import analyzers
from mint_migrate.analyze.shell import Command
from mint_migrate.errors import MintMigrateError
from mint_migrate.frameworks import framework_list

# A launch of a script that was not given still says TRL when it passes TRL's own flags.
_TRL_FLAGS = {"model_name_or_path", "per_device_train_batch_size", "num_generations", "max_completion_length",
              "dataset_name", "use_peft", "lora_r", "gradient_accumulation_steps", "num_train_epochs"}
# Fields of TRL's first PPOConfig (PPOTrainer.step(), up to trl 0.11), which scripts copied from its
# examples still parse: `--ppo_epochs 3 --mini_batch_size 1 --log_with wandb --query_dataset ...`.
_TRL_PPO_V1_FLAGS = {"ppo_epochs", "mini_batch_size", "log_with", "query_dataset", "adap_kl_ctrl", "tracker_project_name"}
# Flags of accelerate's `*_no_trainer.py` example scripts, the hand-written loop most projects copy
# (open-instruct's finetune.py and dpo_tune.py among them): not TrainingArguments fields.
_NO_TRAINER_FLAGS = {"with_tracking", "checkpointing_steps", "use_slow_tokenizer", "resume_from_checkpoint_dir",
                     "num_warmup_steps", "zero_stage", "actor_zero_stage",  # and DeepSpeed-Chat's, derived from it
                     "batch_size_training", "enable_fsdp", "peft_method"}  # llama-recipes / llama-cookbook's loop
# Fields of the Stanford-Alpaca-style `transformers.Trainer` scripts (FastChat, Vicuna, MedicalGPT's
# SFT): the tokenizer's `model_max_length` where TRL's configs say max_seq_length / max_length; and of
# the Seq2SeqTrainer scripts copied from transformers' examples (ChatGLM's P-Tuning).
_HF_TRAINER_FLAGS = {"model_max_length", "lazy_preprocess", "block_size",  # run_clm's, copied from transformers' examples
                     "predict_with_generate", "pre_seq_len", "prompt_column", "response_column"}  # Seq2SeqTrainer ones
# A hand-written DeepSpeed loop's own argparse flags (deepspeed.add_config_arguments' --deepspeed_config):
# TrainingArguments says per_device_train_batch_size, num_train_epochs and --deepspeed.
_DEEPSPEED_ARGPARSE_FLAGS = {"deepspeed_config", "train_batch_size", "num_epochs"}
# A launch's flags that say its missing script is not a TRL script: (flags, whose they are, whether a
# script of that family named for DPO/KTO/ORPO is still TRL's trainer, subclassed or adapted).
_NOT_TRL_FLAGS = ((_NO_TRAINER_FLAGS, "accelerate's hand-written `no_trainer` loop, not TrainingArguments", False),
                  (_HF_TRAINER_FLAGS, "a script on transformers' Trainer (Stanford Alpaca's and its copies'), not TRL's",
                   True),
                  (_DEEPSPEED_ARGPARSE_FLAGS, "a hand-written DeepSpeed loop's own argparse, not TrainingArguments",
                   True))
_PREFERENCE = {"dpo", "kto", "orpo"}
# Short flags of a script's own argparse that TrainingArguments spells otherwise (learning_rate,
# num_train_epochs, per_device_train_batch_size, model_name_or_path): a wrapper's, which may drive TRL's
# trainer or another framework; the framework its launcher links to, when it links to one, says which.
_OWN_ARGPARSE_FLAGS = {"lr", "epochs", "batch_size", "model"}
_REPOSITORY = re.compile(r"github\.com/([\w.-]+)/([\w.-]+)")


@dataclass(frozen=True)
class Detected:
    framework: str
    where: Loc
    guessed: str | None = None  # why the framework is only a guess; the plan warns with it


# Launchers that only ever start training processes.
_TRAINING_LAUNCHERS = {"torchrun", "deepspeed", "accelerate"}
# A launch that states this many settings is worth a plan even when its script is missing.
_ENOUGH_TO_PLAN = 3


def detect(project: Project) -> Detected:
    primary = project.primary
    if primary.shell is not None:
        return _from_shell(project, primary)
    if primary.python is not None:
        found = framework_of_python(primary.python) or _from_companions(project)
        if found is not None:
            return Detected(*found)
        if algorithm_in_name(primary.path.stem) is not None and primary.python.argparse:
            return _guess(project, Loc(primary.label, 1), f"{primary.label} is named for training and takes "
                          "settings, but imports no framework this tool knows and has no loop it recognises")
        raise MintMigrateError(
            f"{primary.label}:1: no training setup found: no {framework_list()} import, and no PyTorch "
            "training loop (optimizer + loss.backward()). Pass the script that trains."
        )
    return _from_yaml(project, primary)


def _guess(project: Project, where: Loc, why: str) -> Detected:
    project.guessed = why
    return Detected("pytorch", where, why)


def framework_of_python(src: PySource) -> tuple[str, Loc] | None:
    """The framework the file shows; of several (TRL's trainer beside tinker-cookbook's grading
    helpers), the one whose training calls the file makes."""
    found = [(analyzer, loc) for analyzer in analyzers() if (loc := analyzer.python_signal(src)) is not None]
    if not found:
        return None
    driving = [(a, loc) for a, loc in found if not a.generic and _calls_training_of(src, a.imports)]
    if not driving and src.calls_named("Trainer", "Seq2SeqTrainer", "backward") \
            and all(_imported_unused(src, a.imports) for a, _ in found if not a.generic):
        # `from trl import GRPOTrainer` left unused beside the transformers Trainer that trains: the loop's
        driving = [(a, loc) for a, loc in found if a.generic]
    analyzer, loc = (driving or found)[0]
    return analyzer.name, loc


# Calls that start or step a training run (`GRPOTrainer(...)`, `train.main(...)`, `forward_backward`).
_TRAINING_CALL = re.compile(r"(^|_)train(ing|er)?(_|$)|Trainer|forward_backward|ServiceClient")


def _imported_unused(src: PySource, modules: tuple[str, ...]) -> bool:
    """The file takes names from `modules` (`from trl import X`) and uses none of them, nor calls
    through the module; a bare `import trl` alone still says the file is TRL's."""
    imported = {local: qualified for local, qualified in src.imports.items() if qualified.split(".", 1)[0] in modules}
    named = [local for local, qualified in imported.items() if "." in qualified]  # `from trl import X`
    return bool(named) and all(src.name_uses().get(local, 0) <= 1 for local in named) \
        and not any(c.qualname.split(".", 1)[0] in modules for c in src.calls if c.qualname)  # nor `trl.X(...)`


def _calls_training_of(src: PySource, modules: tuple[str, ...]) -> bool:
    return any(c.qualname.split(".", 1)[0] in modules and _TRAINING_CALL.search(c.qualname.rsplit(".", 1)[-1])
               for c in src.calls if c.qualname)


def _from_companions(project: Project) -> tuple[str, Loc] | None:
    """The primary file says nothing (a launcher module importing the project's own trainer): the
    other Python files given decide."""
    for f in project.pythons():
        found = framework_of_python(f.python)
        if found is not None:
            return found
    return None


def framework_of_command(command: Command, script: InputFile | None) -> str | None:
    for analyzer in analyzers():
        if analyzer.detect_command(command, script):
            return analyzer.name
    if script is not None and script.python is not None:
        found = framework_of_python(script.python)
        return found[0] if found else None
    return None


def _from_shell(project: Project, primary: InputFile) -> Detected:
    if not project.launches:
        raise MintMigrateError(
            f"{primary.label}:1: no training command found: no python / torchrun / deepspeed / accelerate launch / "
            "ray job submit / trl command line. Pass the script that launches training, or the training script."
        )
    for command, script in project.launches:
        framework = framework_of_command(command, script)
        if framework is not None:
            return Detected(framework, command.loc)
    # the run, not a server or an evaluation started around it
    command, script = next(((c, s) for c, s in project.launches if not c.auxiliary), project.launches[0])
    if script is not None and _from_companions(project) is not None:
        return Detected(_from_companions(project)[0], command.loc)
    if (command.script or command.module) and script is None:
        flags = {a.name for a in command.flags()}
        handed = flags | {key for y in project.yamls() for key in y.yaml.values if "." not in key}
        filed_under = next((a.name for a in analyzers() if a.name in command.target_parts[:-1]), None)
        if filed_under is not None:  # `python -m training.trl.grpo`: the project files its entry point under it
            return Detected(filed_under, command.loc, _not_given(command, f"its path names {filed_under}"))
        for known, whose, preference_is_trl in _NOT_TRL_FLAGS:
            if handed & known:
                why = f"its flags ({sorted(handed & known)[0]}) are those of {whose}"
                named = algorithm_in_name(command.target_parts[-1])
                if preference_is_trl and named in _PREFERENCE:  # LLaVA-RLHF's and its kin's DPOTrainer subclasses
                    return Detected("trl", command.loc, _not_given(
                        command, f"{why}; named for {named}, it is most likely TRL's trainer subclassed"))
                return _guess(project, command.loc, _not_given(command, why))
        cited = _framework_cited(primary) if len(flags & _OWN_ARGPARSE_FLAGS) >= 2 else None
        if cited is not None:  # `--lr --epochs --batch_size`: a wrapper's own argparse, of the framework it links to
            own = ", ".join("--" + f for f in sorted(flags & _OWN_ARGPARSE_FLAGS))
            return Detected(cited[0], command.loc, _not_given(
                command, f"its flags ({own}) are a script's own argparse, not a trainer library's config, and {cited[1]}"))
        if flags & _TRL_FLAGS or len(flags & _TRL_PPO_V1_FLAGS) >= 2:
            return Detected("trl", command.loc)
        for y in project.yamls():  # the config it is handed says whose it is
            for analyzer in analyzers():
                if analyzer.detect_config(y.yaml.keys()):
                    return Detected(analyzer.name, command.loc)
        stated = len([a for a in command.args if a.value is not None or a.raw]) + len(project.yamls())
        if stated >= _ENOUGH_TO_PLAN:  # `python -m project.train_rl --lr ...`: the flags are the plan
            return _guess(project, command.loc, f"{command.loc} runs {command.target}, which was not given and "
                          f"was not found beside {primary.label} or in the folders above it: the plan is read from "
                          f"the launch's flags and the configs given alone. Pass it with --config {command.target} "
                          "to read the training code")
        if command.script:
            raise MintMigrateError(
                f"{command.loc}: the command runs {command.script}, which was not given and was not found next to "
                f"{primary.label}; pass it with --config {command.script}."
            )
    if script is not None and script.python is not None and _launches_training(command, script):
        return _guess(project, command.loc, f"{command.loc} launches {script.label}, which imports no framework this "
                      "tool knows and has no loop it recognises (a vendored or in-house trainer)")
    raise MintMigrateError(
        f"{command.loc}: {command.text} is not a {framework_list()} training entry point; pass the training "
        "script it runs with --config."
    )


def _not_given(command: Command, why: str) -> str:
    """Why a plan read from a launch of a script that was not given is only a guess, and what settles it."""
    return (f"{command.loc} runs {command.target}, which was not given; {why}: the plan is read from the launch's "
            f"flags. Pass it with --config {command.target} to read the training code")


def _framework_cited(launcher: InputFile) -> tuple[str, str] | None:
    """The framework whose repository the launcher links to (`# reproduces
    https://github.com/volcengine/verl/blob/main/examples/...`): a wrapper script's own words for what
    it drives."""
    names = {a.name for a in analyzers()}
    for owner, repo in _REPOSITORY.findall(launcher.text):
        name = repo.lower().removesuffix(".git")
        if name in names:
            return name, f"the launcher links to {owner}/{repo}"
    return None


def _launches_training(command: Command, script: InputFile) -> bool:
    """A distributed launcher, or a script named for training that the command hands settings."""
    if command.program in _TRAINING_LAUNCHERS or set(command.launchers) & _TRAINING_LAUNCHERS:
        return True
    return algorithm_in_name(script.path.stem) is not None and len(command.flags()) >= _ENOUGH_TO_PLAN


def _from_yaml(project: Project, primary: InputFile) -> Detected:
    """A config as the primary input: the script or launcher beside it decides when there is one
    (given as a companion, or found in the same folder); else the config's own keys."""
    for f in project.files:
        if f is primary:
            continue
        if f.shell is not None and project.launches:
            try:
                return _from_shell(project, f)
            except MintMigrateError:
                continue
        if f.python is not None:
            found = framework_of_python(f.python)
            if found is not None:
                return Detected(*found)
    keys = primary.yaml.keys()
    first = next(iter(primary.yaml.values.values())).loc if keys else Loc(primary.label, 1)
    if primary.is_infra_config:
        raise MintMigrateError(
            f"{primary.label}:1: this is an accelerate / DeepSpeed config (cluster settings, server-side on MinT), "
            "not a training config. Migrate the training script and pass this file with --config."
        )
    for analyzer in analyzers():
        if analyzer.detect_config(keys):
            return Detected(analyzer.name, first)
    raise MintMigrateError(
        f"{primary.label}:{first.line}: unrecognised config: its keys match no {framework_list()} config, and no "
        "training script was found next to it. Pass the training or launch script, with this file as --config."
    )
