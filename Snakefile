# Run from the repository root: `snakemake --cores 4`. The workflow itself is
# workflow/Snakefile (the catalogue's layout); this file only includes it.


include: "workflow/Snakefile"


# Snakemake's `include:` keeps the including file's default target (none here),
# so the included workflow's `rule all` is named as the default once more.
workflow.default_target = "all"
