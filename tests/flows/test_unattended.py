"""flow.yaml's schedule:, trigger: and a Gate's deadline:/escalate: (DESIGN §16), read and
checked; and which ticks of a schedule are due (ticks.py), from the time alone."""

from __future__ import annotations

import textwrap
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from praxis.flows.definition import contract, host_resources
from praxis.flows.definition.profile import Profile
from praxis.flows.engine import ticks
from praxis.flows.model.flow import Schedule, Trigger

PHASES = """
phases:
  - {id: a, kind: script, script: a.py, outputs: [a.txt]}
"""


def flow_with(tmp_path: Path, text: str) -> Path:
    (tmp_path / "a.py").write_text("open('a.txt', 'w').write('x')\n")
    (tmp_path / "flow.yaml").write_text("flow: f\n" + textwrap.dedent(text))
    return tmp_path


def errors(folder: Path) -> list[str]:
    _, report = contract.load(folder)
    return [str(p) for p in report.errors]


def test_a_schedule_and_a_trigger_load_and_add_their_parameters(tmp_path: Path) -> None:
    folder = flow_with(
        tmp_path,
        'schedule: {cron: "0 6 * * 1-5", timezone: Europe/Berlin, catchup: all}\n'
        'trigger: {files: "incoming/*.csv", settle: 2min}\n' + PHASES,
    )
    flow = contract.require(folder)
    assert flow.schedule == Schedule("0 6 * * 1-5", "Europe/Berlin", "all")
    assert flow.trigger == Trigger("incoming/*.csv", 120.0)
    assert flow.params == {"tick": "", "file": ""}  # a run may be started by hand too


def test_defaults_and_a_declared_parameter_kept(tmp_path: Path) -> None:
    folder = flow_with(tmp_path, 'schedule: "*/5 * * * *"\nparams: {tick: "by hand"}\n' + PHASES)
    flow = contract.require(folder)
    assert flow.schedule == Schedule("*/5 * * * *", "UTC", "latest")
    assert flow.params == {"tick": "by hand"} and flow.trigger is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('schedule: {cron: "0 6 * *"}', "schedule.cron: '0 6 * *' has 4 fields; a cron"),
        ('schedule: {cron: "0 25 * * *"}', "schedule.cron: '0 25 * * *' is not a cron expr"),
        ('schedule: {cron: "0 6 * * *", timezone: Mars/Base}', "'Mars/Base' is not a timezone"),
        ('schedule: {cron: "0 6 * * *", catchup: some}', "'some' is not a catchup"),
        ("schedule: {timezone: UTC}", "schedule: missing required key 'cron'"),
        ('schedule: {cron: "* * * * *", when: 1}', "schedule: unknown key 'when'"),
        ('trigger: {files: "../up/*.csv"}', "must name files inside the flow folder"),
        ('trigger: {files: "/etc/*.csv"}', "must be relative to the flow folder"),
        ('trigger: {files: "*/x.csv"}', "may have * ? [...] in its last part only"),
        ('trigger: {files: "runs/*/run.json"}', "may have * ? [...] in its last part only"),
        ('trigger: {files: "runs/*.json"}', "is in the flow's own record"),
        ('trigger: {files: "in/*.csv", settle: soon}', "trigger.settle: expected a duration"),
        ('trigger: {files: "in/*.csv", settle: 0}', "trigger.settle: must be more than 0 s"),
    ],
)
def test_each_mistake_is_one_line_naming_its_key(tmp_path: Path, text: str, expected: str) -> None:
    found = errors(flow_with(tmp_path, text + "\n" + PHASES))
    assert len(found) == 1 and expected in found[0], found
    assert found[0].startswith("flow.yaml: ") and "\n" not in found[0]


GATED = """
phases:
  - id: a
    kind: script
    script: a.py
    outputs: [a.txt]
    review: {review}
"""


def test_a_deadline_names_a_profile_target_the_check_lists(tmp_path: Path) -> None:
    folder = flow_with(
        tmp_path, GATED.format(review="{required: true, deadline: 2d, escalate: team}")
    )
    flow = contract.require(folder)
    assert (flow.phases[0].deadline, flow.phases[0].escalate) == (2 * 86400.0, ("team",))
    (asked,) = host_resources.asked(flow)
    assert (asked.section, asked.name, asked.where) == (
        "notify",
        "team",
        "phases.a.review.escalate",
    )
    lacking = host_resources.missing(flow, Profile(tmp_path / "profile.yaml"))
    assert lacking and "'team' is not in your profile" in lacking[0][1]


@pytest.mark.parametrize(
    ("review", "expected"),
    [
        ("{required: true, deadline: 2d}", "deadline: and escalate: go together"),
        ("{required: true, escalate: team}", "deadline: and escalate: go together"),
        ("{deadline: 2d, escalate: team}", "a deadline needs a Gate: add required: true"),
        ("{required: true, deadline: 2 weeks, escalate: team}", "expected a duration"),
        ("{required: true, deadline: 2d, escalate: 'https://x'}", "is not a valid target name"),
    ],
)
def test_a_deadline_mistake_is_one_line(tmp_path: Path, review: str, expected: str) -> None:
    found = errors(flow_with(tmp_path, GATED.format(review=review)))
    assert found and expected in found[0], found


# -- ticks -------------------------------------------------------------------------------------

BERLIN = ZoneInfo("Europe/Berlin")


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=BERLIN).timestamp()


WEEKDAYS = Schedule("0 6 * * 1-5", "Europe/Berlin", "latest")


def test_six_on_weekdays_is_six_in_berlin_summer_and_winter() -> None:
    friday_noon = at("2026-07-03T12:00")  # summer: UTC+2
    assert ticks.iso(ticks.after(WEEKDAYS, friday_noon), "Europe/Berlin") == (
        "2026-07-06T06:00:00+02:00"  # Monday: the weekend has no tick
    )
    assert ticks.iso(ticks.after(WEEKDAYS, at("2026-12-04T12:00")), "Europe/Berlin") == (
        "2026-12-07T06:00:00+01:00"
    )


def test_catchup_latest_starts_the_newest_missed_tick_only() -> None:
    down = ticks.due(WEEKDAYS, at("2026-12-01T07:00"), at("2026-12-04T09:00"))
    assert [ticks.iso(t, "Europe/Berlin") for t in down.start] == ["2026-12-04T06:00:00+01:00"]
    assert down.skipped == 2 and down.last == at("2026-12-04T06:00")


def test_catchup_all_starts_each_missed_tick_oldest_first_capped() -> None:
    every = Schedule("0 6 * * 1-5", "Europe/Berlin", "all")
    down = ticks.due(every, at("2026-12-01T07:00"), at("2026-12-04T09:00"))
    assert [t for t in down.start] == [at(f"2026-12-0{d}T06:00") for d in (2, 3, 4)]
    assert down.skipped == 0
    hourly = Schedule("0 * * * *", "UTC", "all")
    long = ticks.due(hourly, 0.0, 100 * 3600.0)
    assert len(long.start) == ticks.MAX_CATCHUP and long.skipped == 100 - ticks.MAX_CATCHUP
    assert long.start[-1] == 100 * 3600.0


def test_catchup_none_skips_missed_ticks_and_starts_one_on_time() -> None:
    none = Schedule("0 6 * * 1-5", "Europe/Berlin", "none")
    late = ticks.due(none, at("2026-12-01T07:00"), at("2026-12-04T09:00"))
    assert late.start == () and late.skipped == 3 and late.last == at("2026-12-04T06:00")
    on_time = ticks.due(none, at("2026-12-03T07:00"), at("2026-12-04T06:00:30"))
    assert on_time.start == (at("2026-12-04T06:00"),)


def test_nothing_due_between_ticks() -> None:
    quiet = ticks.due(WEEKDAYS, at("2026-12-04T06:00"), at("2026-12-04T23:59"))
    assert quiet.start == () and quiet.last is None and quiet.skipped == 0


def test_a_schedule_left_alone_for_years_is_walked_back_a_bounded_way() -> None:
    every = Schedule("* * * * *", "UTC", "all")
    years = ticks.due(every, 0.0, 3 * 365 * 86400.0)
    assert len(years.start) == ticks.MAX_CATCHUP and years.last == 3 * 365 * 86400.0
    assert years.skipped == ticks.MAX_SCAN - ticks.MAX_CATCHUP


def test_a_tick_at_now_is_due_and_one_a_moment_later_is_not() -> None:
    every = Schedule("* * * * *", "UTC", "latest")
    assert ticks.due(every, 0.0, 120.0).start == (120.0,)
    assert ticks.due(every, 0.0, 119.5).start == (60.0,)
    assert ticks.due(every, 60.0, 119.5).start == ()
