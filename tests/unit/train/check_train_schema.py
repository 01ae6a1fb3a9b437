#!/usr/bin/env python3
"""Checks protocol/spec/train-config.schema.json against the config corpus and against the
validator's normalised output, so the schema and remote-runtime/train/train_config.cpp agree.

usage: check_train_schema.py SCHEMA CORPUS NORMALISER
NORMALISER prints, one per line, the normalised form of every valid corpus config."""
import json
import subprocess
import sys

import jsonschema


def main() -> int:
    schema_path, corpus_path, normaliser = sys.argv[1:4]
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    with open(corpus_path) as f:
        corpus = json.load(f)
    failures = []
    checked = 0
    for case in corpus:
        errors = list(validator.iter_errors(case["config"]))
        if case["valid"] and errors:
            failures.append(f"{case['name']}: schema rejects a valid config: {errors[0].message}")
        elif not case["valid"] and case.get("schema_catches", True) and not errors:
            failures.append(f"{case['name']}: schema accepts a config the validator rejects at {case['pointer']}")
        elif not case["valid"] and not case.get("schema_catches", True) and errors:
            failures.append(f"{case['name']}: marked validator-only but the schema rejects it ({errors[0].message}); update the corpus")
        checked += 1
    lines = subprocess.run([normaliser, corpus_path], check=True, capture_output=True, text=True).stdout.splitlines()
    valid = sum(1 for c in corpus if c["valid"])
    if len(lines) != valid:
        failures.append(f"normaliser printed {len(lines)} configs, expected {valid}")
    for line in lines:
        errors = list(validator.iter_errors(json.loads(line)))
        if errors:
            failures.append(f"normalised config rejected by the schema: {errors[0].json_path}: {errors[0].message}")
        checked += 1
    for f in failures:
        print("FAIL", f)
    print(f"{checked} configs checked, {len(failures)} failures")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
