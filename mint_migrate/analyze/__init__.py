"""Analyze source files (python, shell launch scripts, YAML configs) into a MigrationPlan.

The rooms: inputs.py loads the files and links launch commands to the scripts and configs they
name; shell.py reads launch scripts the way bash runs them; pyvalues.py evaluates Python
expressions over the shared index (mint_migrate/pyindex.py); usage.py reads a script's usage
docstring; yamlconf.py and hydra.py read configs; detect.py and registry.py pick the framework
analyzer (trl.py, verl.py, ...); settings.py and choices.py turn the evidence into the plan;
planner.py runs it all. Rendering and writing files live in mint_migrate/migrate.py.
"""

from mint_migrate.analyze.planner import Analysis, analyze, analyze_inputs

__all__ = ["Analysis", "analyze", "analyze_inputs"]
