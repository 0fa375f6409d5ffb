"""Reading Snakemake's own log in tests."""

import re


def jobs_started_beside_another(log_lines):
    """The rules whose job Snakemake's log shows starting while another job ran. The target rule `all` has
    no action (nothing runs), so it may start beside the last job: it is left out."""
    running, started, overlapping = set(), [], []
    jobid = re.compile(r"^\s*jobid: (\d+)$|^Finished jobid: (\d+) \(Rule: (\S+)\)$")
    rule = None
    for line in log_lines:
        if line.startswith(("rule ", "localrule ")) and line.endswith(":"):
            rule = line.split()[1].rstrip(":")
            continue
        match = jobid.match(line)
        if match and match[1] and rule is not None:
            if rule != "all":
                if running:
                    overlapping.append(rule)
                running.add(match[1])
                started.append(rule)
            rule = None
        elif match and match[2]:
            running.discard(match[2])
    return started, overlapping
