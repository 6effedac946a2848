"""The reviewer web UI (`praxis serve`): Starlette pages over the flows below a folder."""
