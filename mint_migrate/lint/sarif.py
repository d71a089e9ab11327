"""SARIF 2.1.0 output for code-scanning UIs (GitHub code scanning, VS Code SARIF viewer)."""

from pathlib import PurePath

from mint_migrate import __version__
from mint_migrate.lint.registry import all_rules

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning"}


def _uri(path: str) -> str:
    return PurePath(path).as_posix()


def to_sarif(reports: list) -> dict:
    """One SARIF run holding every rule of the registry and the findings of `reports`
    (mint_migrate.lint.LintReport objects). A file that did not parse becomes an error
    notification and marks the run's invocation as unsuccessful."""
    rules = all_rules()
    index = {rule.id: i for i, rule in enumerate(rules)}
    results = []
    notifications = []
    for report in reports:
        for finding in report.findings:
            results.append(
                {
                    "ruleId": finding.id,
                    "ruleIndex": index[finding.id],
                    "level": LEVELS[finding.severity],
                    "message": {"text": f"{finding.message} Fix: {finding.fix}"},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": _uri(finding.path)},
                                "region": {"startLine": finding.line, "startColumn": finding.col},
                            }
                        }
                    ],
                    "properties": {"fixable": finding.fixable},
                }
            )
        if report.parse_error:
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": f"{report.path}: cannot parse: {report.parse_error}"},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": _uri(report.path)},
                                "region": {
                                    "startLine": report.parse_error_line or 1,
                                    "startColumn": report.parse_error_col or 1,
                                },
                            }
                        }
                    ],
                }
            )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mint-migrate",
                        "version": __version__,
                        "rules": [
                            {
                                "id": rule.id,
                                "name": rule.name,
                                "shortDescription": {"text": rule.summary},
                                "fullDescription": {"text": rule.what},
                                "help": {
                                    "text": f"Why: {rule.why}\nFix: {rule.fix}",
                                    "markdown": f"**Why it matters on MinT.** {rule.why}\n\n**Fix.** {rule.fix}\n\n"
                                    f"```python\n# bad\n{rule.bad}\n\n# good\n{rule.good}\n```",
                                },
                                "defaultConfiguration": {"level": LEVELS[rule.severity]},
                                "properties": {"family": rule.family, "autofix": rule.autofix is not None},
                            }
                            for rule in rules
                        ],
                    }
                },
                "invocations": [
                    {"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}
                ],
                "results": results,
            }
        ],
    }
