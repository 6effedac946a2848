"""The engine floor: the runner's verbs and a phase's attempt in a sandbox, collecting, checks,
reuse, reviewers' edits carried over, notifications. Imports every floor but the report."""
