"""The model floor: a flow and a run as values (the flow, its phases and parameters, the run's
state machine, every event kind). Imports no other floor of ``praxis.flows``."""
