"""The definition floor: flow.yaml and the files it names, read and checked (bounded, hostile
input), and the digests that say what a phase computes. Imports only the model."""
