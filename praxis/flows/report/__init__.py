"""The report floor: what a run says to a person or a program (status, route, receipt, replay,
trace), read from the floors below. Writes nothing."""
