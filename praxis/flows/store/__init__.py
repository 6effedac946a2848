"""The store floor: a run folder on disk (paths, run.json and events.jsonl written together, the
lock, snapshots, records, the content store). Imports the model and the definition."""
