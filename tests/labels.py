"""The label every container a test session creates carries: unique to this session, so a
session's clean-up never removes another session's containers."""

import os

SESSION = f"{os.getpid()}"
TEST_LABELS = {"praxis.test": SESSION}
TEST_LABEL = f"praxis.test={SESSION}"
