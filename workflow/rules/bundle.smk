# Results that travel: one bundle per machine and experiment, and the
# verified unpacking of other machines' bundles named in extra_runs.


rule bundle:
    input:
        attempts=attempt_files,
        calibration=calibration_files(),
    output:
        **(
            {"signature": f"{RESULTS}/bundle-{HOST}.tar.gz.sig"}
            if config["bundle_signing_key"]
            else {}
        ),
        bundle=f"{RESULTS}/bundle-{HOST}.tar.gz",
        # its signature, where the config names a key (records/signing.py)
    log:
        f"{LOGS}/bundle.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        experiment=EXPERIMENT,
        config=report_config(),
        code=TRAINING_CODE_DIGEST,
        signing_key=config["bundle_signing_key"],
    script:
        "../scripts/bundle.py"


# Verified in a job of its own first: a refused bundle fails there, so the
# earlier verified import of the same bundle is never deleted.
rule verify_bundle:
    input:
        bundle_path,
    output:
        verified=f"{LOGS}/imported/{{name}}.verified.json",
        # the bytes verified, which the unpacking reads (never the given file again)
        bundle=f"{LOGS}/imported/{{name}}.verified.tar.gz",
    log:
        f"{LOGS}/imported/{{name}}.verify.log",
    wildcard_constraints:
        name="|".join(re.escape(name) for name in IMPORTED) or "(?!x)x",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        trusted_keys=config["trusted_keys"],
        # its content decides what is trusted on every call: a key removed verifies again
        trusted_keys_sha256=file_sha256(config["trusted_keys"]),
    script:
        "../scripts/verify_bundle.py"


rule unpack_bundle:
    input:
        verified=f"{LOGS}/imported/{{name}}.verified.json",
        bundle=f"{LOGS}/imported/{{name}}.verified.tar.gz",
    output:
        directory(f"{RESULTS}/imported/{{name}}"),
    log:
        f"{LOGS}/imported/{{name}}.log",
    wildcard_constraints:
        name="|".join(re.escape(name) for name in IMPORTED) or "(?!x)x",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    script:
        "../scripts/unpack_bundle.py"
