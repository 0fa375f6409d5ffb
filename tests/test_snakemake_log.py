"""The job-overlap check that tests/test_workflow.py runs on a real log, on crafted logs."""

from snakemake_log import jobs_started_beside_another


def test_the_overlap_check_finds_a_job_started_beside_another():
    """The overlap check on two crafted logs: a bundle started while the aggregate ran is found; the action-less
    target `all` starting beside the bundle is not an overlap."""

    def job(rule, number):
        return [f"localrule {rule}:", "    input: x", f"    jobid: {number}"]

    def done(rule, number):
        return [f"Finished jobid: {number} (Rule: {rule})"]

    overlapping = [*job("aggregate", 3), *job("bundle", 4), *done("aggregate", 3), *done("bundle", 4)]
    assert jobs_started_beside_another(overlapping) == (["aggregate", "bundle"], ["bundle"])
    target_beside = [*job("bundle", 4), *job("all", 0), *done("all", 0), *done("bundle", 4)]
    assert jobs_started_beside_another(target_beside) == (["bundle"], [])
