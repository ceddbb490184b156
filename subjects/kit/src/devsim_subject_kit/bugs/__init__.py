"""The real-bug runner: real device-dispatch bugs of other projects, buggy and fixed, run on simulated hosts.

`python -m devsim_subject_kit.bugs run [CASE_OR_DIR ...]` reads case files (`bugs/<id>.toml`, the format in
`docs/real-bugs-format.md`), installs each side into a cache (`install`), runs every trigger as a pytest session
on the simulated host (`trigger`), and says per case whether the bug was reproduced, caught without code written
for it, or falsely alarmed on the fixed side (`verdict`), as a table, JUnit and JSON (`report`).

Modules, one job each: `case` (the case's typed form), `locate` (the line of a key in a TOML text), `load`
(reading and validating a case file), `install` (a side's tree in the cache), `stubs` (lenient stub modules),
`trigger` (one trigger as a pytest session), `observe` (what a repro's observation means), `verdict`, `report`,
`runner` (cases in parallel) and `cli`.
"""
