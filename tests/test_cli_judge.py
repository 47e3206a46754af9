"""condambig-score's judge: only the one the user names; a logged run's judge is told."""

from condambig_metrics.judge import JudgeConfig
from condambig_tasks.cli_judge import LoggedJudge, logged_judge, logged_judge_notice

COMMAND = ["condambigqa", "--from-log", "out"]


def test_a_run_judged_through_the_environment_is_known_by_its_provenance():
    provenance = {"judge": "judge-a", "judge_base_url": "http://127.0.0.1:9/v1"}
    assert logged_judge({}, provenance) == LoggedJudge("judge-a", "http://127.0.0.1:9/v1")
    assert logged_judge({"judge_model": "m"}, None) == LoggedJudge("m", None)
    assert logged_judge({}, {"judge": None}) is None
    assert logged_judge(["odd"], "odd") is None  # wrongly typed log fields: no judge


def test_without_a_judge_here_the_notice_gives_the_flags_that_judge_as_the_run_did():
    run = LoggedJudge("judge-a", "http://h:8000/v1")
    notice = logged_judge_notice("condambigqa", run, None, COMMAND)
    assert "the run was judged by judge-a at http://h:8000/v1" in notice
    assert notice.endswith("condambig-score condambigqa --from-log out --judge-model judge-a "
                           "--judge-base-url http://h:8000/v1")


def test_another_judge_is_said_so_and_the_same_judge_says_nothing():
    run = LoggedJudge("judge-a", "http://h:8000/v1/")
    other = JudgeConfig(model="judge-b", base_url="http://h:8000/v1")
    assert "re-judging with judge-b" in logged_judge_notice("x", run, other, COMMAND)
    same = JudgeConfig(model="judge-a", base_url="HTTP://H:8000/v1")
    assert logged_judge_notice("x", run, same, COMMAND) is None
    assert logged_judge_notice("x", None, None, COMMAND) is None
