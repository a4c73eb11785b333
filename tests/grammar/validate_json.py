#!/usr/bin/env python3
"""Validates generated JSON texts against their schemas with the jsonschema
package (Debian python3-jsonschema), a validator this project did not write.

Input (argv[1]): a JSON list of {"schema": ..., "outputs": [text, ...]}.
Exit status 0 when every text parses and validates; otherwise each failure
is printed and the status is 1."""
import json
import sys

import jsonschema


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    failures = 0
    checked = 0
    for case in cases:
        validator = jsonschema.Draft202012Validator(case["schema"])
        for text in case["outputs"]:
            checked += 1
            try:
                validator.validate(json.loads(text))
            except (ValueError, jsonschema.ValidationError) as e:
                failures += 1
                print(f"INVALID: {text!r}\n  schema: {json.dumps(case['schema'])}\n  error: {e}")
    print(f"validated {checked} outputs, {failures} invalid")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
