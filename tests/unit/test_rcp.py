"""The RCP checker reimplemented (pipelines.lib.mlperf.rcp): its numerics against known numpy and scipy
values, each release's semantics read from source snippets (the installed package's full source too), and
every branch of the verdict on synthetic RCP files and logs."""

from __future__ import annotations

import json
import math
from importlib import resources

import pytest

from pipelines.lib.mlperf import rcp, rcp_convergence, rcp_numerics, rcp_records, rcp_semantics
from pipelines.lib.mlperf.mllog import MLLOG, parse_log

INSTALLED_SOURCE = resources.files("mlperf_logging.rcp_checker").joinpath("rcp_checker.py").read_text()
TODAY = rcp_semantics.RcpSemantics.from_checker_source(INSTALLED_SOURCE)


# ---------------------------------------------------------------------------------------------- numerics

@pytest.mark.parametrize("t,df,expected", [
    (2.0, 10, 0.9633059826146299),  # scipy.special.stdtr
    (-1.7, 30, 0.04973893779425843),
    (-3.0, 1, 0.10241638234956672),
    (-1e3, 3, 1.102653821288296e-09),
    (40.0, 5, 0.9999999079401891),
    (-1.0, 2.5, 0.20203051363913682),
    (-1.819164434805904, 1e6, 0.034443322965784624),  # exact (finite series, 40 digits)
])
def test_student_t_cdf_known_values(t, df, expected):
    assert rcp_numerics.student_t_cdf(t, df) == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("t", [-1e6, -50.0, -3.0, -1.0, -0.1, 0.3, 2.0, 1e4])
def test_student_t_cdf_closed_forms(t):
    lower = -abs(t)  # the closed forms, written without cancellation in the far tail
    cauchy = math.atan(-1 / lower) / math.pi
    two = 1 / (math.sqrt(2 + t * t) * (math.sqrt(2 + t * t) + abs(t)))
    assert rcp_numerics.student_t_cdf(lower, 1) == pytest.approx(cauchy, rel=1e-13)
    assert rcp_numerics.student_t_cdf(lower, 2) == pytest.approx(two, rel=1e-13)
    assert rcp_numerics.student_t_cdf(abs(t), 2) == pytest.approx(1 - two, rel=1e-15)
    assert rcp_numerics.student_t_cdf(t, 7) + rcp_numerics.student_t_cdf(-t, 7) == pytest.approx(1.0, rel=1e-15)


def test_student_t_cdf_edges():
    assert rcp_numerics.student_t_cdf(0.0, 4) == 0.5
    assert rcp_numerics.student_t_cdf(-math.inf, 4) == 0.0 and rcp_numerics.student_t_cdf(math.inf, 4) == 1.0
    assert math.isnan(rcp_numerics.student_t_cdf(1.0, 0)) and math.isnan(rcp_numerics.student_t_cdf(math.nan, 3))
    # a huge df is the normal distribution
    assert rcp_numerics.student_t_cdf(-1.5, math.inf) == pytest.approx(0.5 * math.erfc(1.5 / math.sqrt(2)), rel=1e-15)
    assert rcp_numerics.student_t_cdf(-1.5, 1e12) == pytest.approx(0.5 * math.erfc(1.5 / math.sqrt(2)), rel=1e-9)


def test_betainc_identities():
    assert rcp_numerics.betainc(3.5, 1.0, 0.3) == pytest.approx(0.3 ** 3.5, rel=1e-14)
    assert rcp_numerics.betainc(1.0, 2.5, 0.3) == pytest.approx(1 - 0.7 ** 2.5, rel=1e-14)
    assert rcp_numerics.betainc(40.0, 40.0, 0.5) == pytest.approx(0.5, rel=1e-14)
    assert rcp_numerics.betainc(2.0, 3.0, 0.0) == 0.0 and rcp_numerics.betainc(2.0, 3.0, 1.0) == 1.0


def test_numpy_means_and_stdev_to_the_last_bit():
    values = [0.1, 7.7, 1234.567, 1234.567, 0.3, 0.1, 0.3, 0.3, 3.3, 0.3]
    assert rcp_numerics.np_mean(values) == 248.15340000000006  # np.mean: pairwise, not sum()/len() (…0001)
    assert sum(values) / len(values) != rcp_numerics.np_mean(values)
    assert rcp_numerics.np_std([1.5, 2.25, 3.125, 4.0]) == 0.9369790219103094
    assert math.isnan(rcp_numerics.np_mean([]))
    assert rcp_numerics.np_mean([3, 4]) == 3.5  # ints, as numpy casts them


def test_np_interp_two_points():
    assert rcp_numerics.np_interp(32, 16, 64, 12.0, 22.0) == pytest.approx(12 + 10 / 3, rel=1e-15)
    assert rcp_numerics.np_interp(16, 16, 64, 12.0, 22.0) == 12.0 and rcp_numerics.np_interp(64, 16, 64, 12.0, 22.0) == 22.0
    assert rcp_numerics.np_interp(8, 16, 64, 12.0, 22.0) == 12.0 and rcp_numerics.np_interp(80, 16, 64, 12.0, 22.0) == 22.0


@pytest.mark.parametrize("args,t,p", [  # scipy.stats.ttest_ind_from_stats(..., equal_var=True)
    ((1.5, 0.4, 8, 2.0, 0.4, 8), -2.5, 0.025466664614062162),
    ((100.0, 12.0, 18, 110.0, 12.0, 8), -1.9611613513818404, 0.06156283786197659),
    ((3.0, 1.0, 2, 3.5, 1.0, 1), -0.4082482904638631, 0.7532482855711501),
])
def test_one_sided_p_value(args, t, p):
    assert rcp_numerics.one_sided_p_value(*args) == pytest.approx(p / 2 if t < 0 else 1 - p / 2, rel=1e-13)


def test_one_sided_p_value_without_degrees_of_freedom_is_nan():
    assert math.isnan(rcp_numerics.one_sided_p_value(3.0, 1.0, 1, 3.5, 1.0, 1))  # scipy: nan, no exception


def test_min_acceptable_mean():
    assert rcp_numerics.min_acceptable_mean(10.0, 0.0, 8, 5) == 10.0  # no spread: the mean itself
    found = rcp_numerics.min_acceptable_mean(100.0, 12.0, 18, 10)
    assert 0 < found < 100
    # the bound is where the one-sided p-value crosses alpha, within the tolerance
    assert rcp_numerics.one_sided_p_value(found + 1e-3, 12.0, 18, 100.0, 12.0, 8) > 0.05
    assert rcp_numerics.one_sided_p_value(found - 1e-3, 12.0, 18, 100.0, 12.0, 8) <= 0.05


# ----------------------------------------------------------------------------------- release semantics

def _source(*parts: str) -> str:
    return "\n".join(parts)


# Lines of the releases' rcp_checker.py, as they read (facts: the differences between releases)
RUNS_FLAT = "submission_runs = {\n    'bert': 10,\n    'dlrm': 5,\n    'unet3d' : 40,\n}"
RUNS_USAGE = ("submission_runs = {\n    \"training\": {\n        'bert': 10,\n        'resnet' : 5,\n"
              "        'unet3d' : 40,\n        'llama31_405b': 3,\n        'stable_diffusion': 10,\n    },\n"
              "    \"hpc\": {\n        'cosmoflow': 10,\n    }\n}")
CONSTANTS = ("        self.alpha = 0.05\n        self.tolerance = 0.0001\n"
             "            samples_rejected = 4 if record_contents['Benchmark'] == 'unet3d' else 1\n"
             "        samples_rejected = 4 if rcp_record[\"Benchmark\"] == 'unet3d' else 1\n"
             "    if (not_converged > 1 and benchmark != 'unet3d') or (not_converged > 4 and benchmark == 'unet3d'):")
INTERP_OLD = "                         submission_runs[benchmark]*2)"
INTERP_NEW = "                         self.submission_runs*2)"
STD_OLYMPIC = "            record_contents['RCP Stdev'] = np.std(epoch_list[samples_rejected:len(epoch_list)-samples_rejected])"
STD_ALL = "            record_contents['RCP Stdev'] = np.std(epoch_list)"
FOLDER_USAGE = "        return os.path.join(os.path.dirname(__file__), f\"{usage}_{ruleset}\","
FOLDER_1_0 = "        json_file = os.getcwd() + '/mlperf_logging/rcp_checker/' + ruleset + '/rcps_'+ benchmark+ '.json'"
EVAL_ACCURACY = "                    if not use_train_samples and \"eval_accuracy\" in str:"
EVAL_ERROR_IF_ANY = "def _detect_eval_error(file_contents):"
EVAL_EITHER = "                elif not use_train_samples and (\"eval_error\" in str or \"eval_accuracy\" in str):"
PER_FILE = ("def read_submission_file(result_file, ruleset, use_train_samples):\n"
            "                if \"submission_benchmark\" in str:")
RUN_STOP_KEY = "                if \"run_stop\" in str and json.loads(str)[\"key\"] == \"run_stop\":"
PRUNE = ("    def _prune_rcps(self):\n"
         "        for benchmark in submission_runs['training'].keys():\n"
         "            fastest_conv = min(min_epochs, key=lambda rc: rc['Min Epochs'])\n"
         "                if min_epochs[i]['Min Epochs'] > rcp['Min Epochs']:")
PRUNE_MEAN = ("    def _prune_rcps(self):\n"
              "        fastest_conv = min(min_epochs, key=lambda rc: rc['RCP Mean'])\n"
              "            if min_epochs[i]['RCP Mean'] > rcp['RCP Mean']:")
SORTED = "            sorted_rcp_data = dict(sorted(processed_rcp_data.items(), key = lambda item: item[1]['BS']))"
NORM = ("    def _find_norm_factor(self, rcp_record, mean_subm_epochs):\n"
        "    def _set_results_scaling(self, scale_factor, results_dir):")
RETURNS_NORM = "    return rcp_check, rcp_msg, rcp_score_norm"
RESET = "        self._reset_results_scaling(results_dir)"
SD_3_1 = ("                if benchmark == \"stable_diffusion\" and (\"eval_error\" in str or \"eval_accuracy\" in str):\n"
          "                    eval_step = json.loads(eval_accuracy_str)[\"metadata\"][\"step_num\"]\n"
          "                                if eval_result[\"FID\"] <= 90.0 and eval_result[\"CLIP\"] >= 0.15:\n"
          "                                    passing_epochs.append(eval_step)")
SD_4_0 = SD_3_1.replace("eval_step = json.loads(eval_accuracy_str)[\"metadata\"][\"step_num\"]",
                        "step_unit = \"step_num\" if ruleset in [\"3.1.0\"] else \"samples_count\"")
SAMPLES_4_0 = ("                elif benchmark == \"llama2_70b_lora\" and (\"eval_error\" in str or \"eval_accuracy\" in str):\n"
               "                    eval_accuracy_str = str\n"
               "                    conv_epoch = json.loads(eval_accuracy_str)[\"metadata\"][\"samples_count\"]\n"
               "            conv_unit = \"samples to converge\" if record_contents['Benchmark']=='llama2_70b_lora' "
               "else \"Epochs to converge\"")
SAMPLES_5_1 = ("                elif benchmark in {\"llama2_70b_lora\", \"flux1\", \"llama31_405b\", \"llama31_8b\"} and "
               "(\"eval_error\" in str or \"eval_accuracy\" in str):\n"
               "                    eval_accuracy_str = str\n"
               "                    conv_epoch = json.loads(eval_accuracy_str)[\"metadata\"][\"samples_count\"]\n"
               "            conv_unit = \"samples to converge\" if record_contents['Benchmark'] in ['llama2_70b_lora', 'flux1'] "
               "else \"Epochs to converge\"")
OFFSET = ("        if {cond} and self.benchmark == \"llama31_405b\": \n"
          "            rcp_record['Max Speedup'] = rcp_record['RCP Mean'] / (rcp_record['Min Epochs'] - 46080)")
RULESETS = "        if ruleset not in {rulesets}:"

RELEASES = {
    "1.0.0": _source(RUNS_FLAT, "        if ruleset != '1.0.0':", FOLDER_1_0, EVAL_ACCURACY, STD_OLYMPIC, CONSTANTS,
                     INTERP_OLD),
    "1.1.0-rc4": _source(RUNS_USAGE, RULESETS.format(rulesets="{'1.0.0', \"1.1.0\"}"), FOLDER_USAGE,
                         EVAL_ERROR_IF_ANY, STD_OLYMPIC, CONSTANTS, INTERP_OLD),
    "2.0.0-rc4": _source(RUNS_USAGE, RULESETS.format(rulesets="{'1.0.0', \"1.1.0\", \"2.0.0\"}"), FOLDER_USAGE,
                         EVAL_ERROR_IF_ANY, STD_OLYMPIC, CONSTANTS, INTERP_OLD, SORTED, PRUNE),
    "2.1.0": _source(RUNS_USAGE, RULESETS.format(rulesets="{'1.0.0', \"2.1.0\"}"), FOLDER_USAGE, EVAL_ERROR_IF_ANY,
                     STD_OLYMPIC, CONSTANTS, INTERP_OLD, SORTED, PRUNE.replace("['training']", "[self.usage]"), NORM),
    "3.0.0-rc2": _source(RUNS_USAGE, RULESETS.format(rulesets="{\"3.0.0\"}"), FOLDER_USAGE, PER_FILE, EVAL_EITHER,
                         STD_OLYMPIC, CONSTANTS, INTERP_NEW, SORTED, PRUNE.replace("['training']", "[self.usage]"),
                         NORM, RETURNS_NORM),
    "acd623ea": _source(RUNS_USAGE, RULESETS.format(rulesets="{\"3.1.0\"}"), FOLDER_USAGE, PER_FILE, EVAL_EITHER,
                        RUN_STOP_KEY, SD_3_1, STD_OLYMPIC, CONSTANTS, INTERP_NEW, SORTED,
                        PRUNE.replace("['training']", "[self.usage]"), NORM, RETURNS_NORM),
    "4.0.0-rc3": _source(RUNS_USAGE, RULESETS.format(rulesets="{\"4.0.0\"}"), FOLDER_USAGE, PER_FILE, EVAL_EITHER,
                         RUN_STOP_KEY, SD_4_0, SAMPLES_4_0, STD_OLYMPIC, CONSTANTS, INTERP_NEW, SORTED, PRUNE_MEAN,
                         NORM, RETURNS_NORM),
    "5.0.0-rc3": _source(RUNS_USAGE, RULESETS.format(rulesets="{\"5.0.0\"}"), FOLDER_USAGE, PER_FILE, EVAL_EITHER,
                         RUN_STOP_KEY, SD_4_0, SAMPLES_4_0, STD_ALL, CONSTANTS, INTERP_NEW, SORTED, PRUNE_MEAN, NORM,
                         RETURNS_NORM, OFFSET.format(cond="self.ruleset == \"5.0.0\"")),
    "5.1.0-rc4": _source(RUNS_USAGE, RULESETS.format(rulesets="{\"5.1.0\"}"), FOLDER_USAGE, PER_FILE, EVAL_EITHER,
                         RUN_STOP_KEY, SD_4_0, SAMPLES_5_1, STD_ALL, CONSTANTS, INTERP_NEW, SORTED, PRUNE_MEAN, NORM,
                         RETURNS_NORM, RESET, OFFSET.format(cond="self.ruleset in [\"5.0.0\", \"5.1.0\"]")),
    "6.0.0-rc6": _source(RUNS_USAGE, RULESETS.format(rulesets="{\"6.0.0\"}"), FOLDER_USAGE, PER_FILE, EVAL_EITHER,
                         RUN_STOP_KEY, SD_4_0, SAMPLES_5_1, STD_ALL, CONSTANTS, INTERP_NEW, SORTED, PRUNE_MEAN, NORM,
                         RETURNS_NORM, RESET, OFFSET.format(cond="is_version_at_least(self.ruleset, \"5.0.0\")")),
}

EXPECTED = {  # what differs from the release before
    "1.0.0": dict(rulesets={"1.0.0"}, rcp_folder="{ruleset}", benchmark_from_log=False, per_file_reader=False,
                  eval_lines="accuracy", stdev_olympic=True, sorts_by_bs=False, prune_key=None, norm_factor=False,
                  returns_norm=False, resets_scaling=False, speedup_offsets=(), stable_diffusion=None),
    "1.1.0-rc4": dict(rulesets={"1.0.0", "1.1.0"}, rcp_folder="{usage}_{ruleset}", eval_lines="error_if_any"),
    "2.0.0-rc4": dict(rulesets={"1.0.0", "1.1.0", "2.0.0"}, sorts_by_bs=True, prune_key="Min Epochs", prune_usage="training"),
    "2.1.0": dict(rulesets={"1.0.0", "2.1.0"}, prune_usage=None, norm_factor=True),
    "3.0.0-rc2": dict(rulesets={"3.0.0"}, benchmark_from_log=True, per_file_reader=True, eval_lines="either", returns_norm=True,
                      run_stop_key_checked=False),
    "acd623ea": dict(rulesets={"3.1.0"}, run_stop_key_checked=True, stable_diffusion="stable_diffusion", sd_step_unit="step_num",
                     sd_criteria=(("FID", "<=", 90.0), ("CLIP", ">=", 0.15))),
    "4.0.0-rc3": dict(rulesets={"4.0.0"}, prune_key="RCP Mean", sd_step_unit="samples_count",
                      sd_step_unit_rulesets=(("3.1.0", "step_num"),),
                      samples_count_benchmarks={"llama2_70b_lora"}, samples_unit_benchmarks={"llama2_70b_lora"}),
    "5.0.0-rc3": dict(rulesets={"5.0.0"}, stdev_olympic=False,
                      speedup_offsets=(rcp_semantics.SpeedupOffset("llama31_405b", 46080.0, frozenset({"5.0.0"})),)),
    "5.1.0-rc4": dict(rulesets={"5.1.0"}, resets_scaling=True,
                      samples_count_benchmarks={"llama2_70b_lora", "flux1", "llama31_405b", "llama31_8b"},
                      samples_unit_benchmarks={"llama2_70b_lora", "flux1"},
                      speedup_offsets=(rcp_semantics.SpeedupOffset("llama31_405b", 46080.0,
                                                                   frozenset({"5.0.0", "5.1.0"})),)),
    "6.0.0-rc6": dict(rulesets={"6.0.0"},
                      speedup_offsets=(rcp_semantics.SpeedupOffset("llama31_405b", 46080.0, min_ruleset="5.0.0"),)),
}


@pytest.mark.parametrize("release", list(RELEASES))
def test_semantics_of_each_release(release):
    semantics = rcp_semantics.RcpSemantics.from_checker_source(RELEASES[release])
    assert semantics.supported, semantics.unsupported
    expected = {}
    for name in list(RELEASES)[:list(RELEASES).index(release) + 1]:
        expected.update(EXPECTED[name])
    for name, value in expected.items():
        got = getattr(semantics, name)
        assert (set(got) if isinstance(value, set) else got) == value, (release, name)
    assert semantics.alpha == 0.05 and semantics.tolerance == 0.0001
    assert semantics.rejected_for("unet3d") == 4 and semantics.rejected_for("bert") == 1
    assert semantics.not_converged_allowed("unet3d") == 4 and semantics.not_converged_allowed("ssd") == 1


def test_release_1_0_has_one_flat_table():
    semantics = rcp_semantics.RcpSemantics.from_checker_source(RELEASES["1.0.0"])
    assert semantics.runs("training", "dlrm") == 5
    assert semantics.rcp_path("training", "1.0.0", "bert") == "1.0.0/rcps_bert.json"
    with pytest.raises(KeyError):
        semantics.runs("hpc", "cosmoflow")


def test_installed_package_semantics():
    assert TODAY.supported, TODAY.unsupported
    assert {"6.0.0", "6.1.0"} <= TODAY.rulesets
    assert TODAY.runs("training", "llama31_405b") == 3 and TODAY.runs("hpc", "deepcam") == 5
    assert TODAY.rcp_path("hpc", "3.0.0", "oc20") == "hpc_3.0.0/rcps_oc20.json"
    assert {"llama2_70b_lora", "llama31_405b", "gpt_oss_20b", "deepseekv3_671b"} <= TODAY.samples_count_benchmarks
    assert TODAY.speedup_offsets == (rcp_semantics.SpeedupOffset("llama31_405b", 46080.0, min_ruleset="5.0.0"),)
    assert TODAY.prune_key == "RCP Mean" and not TODAY.stdev_olympic and TODAY.resets_scaling
    assert TODAY.step_unit("3.1.0") == "step_num" and TODAY.step_unit("5.0.0") == "samples_count"


def test_unknown_constructs_are_not_guessed():
    semantics = rcp_semantics.RcpSemantics.from_checker_source(RELEASES["2.1.0"].replace("submission_runs = {", "RUNS = {"))
    assert not semantics.supported and "the submission_runs dict" in semantics.unsupported
    odd = INSTALLED_SOURCE.replace("- 46080)", "- 46080) * 2")
    assert not rcp_semantics.RcpSemantics.from_checker_source(odd).supported
    tables = rcp_records.rcp_tables({}, "training", "5.1.0", semantics)
    verdict = rcp.check_result([_run(16, 10.0)], tables)
    assert verdict.passed is None and verdict.label is None and "not supported" in verdict.message


# ------------------------------------------------------------------------------------- logs and runs

def _line(key: str, value, **metadata) -> str:
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": key,
                                     "value": value, "metadata": metadata})


def _log(benchmark: str | None, bs, epochs, success: bool = True) -> list[str]:
    lines = [_line("submission_benchmark", benchmark)] if benchmark else []
    lines += [_line("global_batch_size", bs)] if bs is not None else []
    lines += [_line("eval_accuracy", 0.5, epoch_num=e) for e in ([epochs] if not isinstance(epochs, list) else epochs)]
    return lines + [_line("run_stop", None, status="success" if success else "aborted")]


def _run(bs, epochs, benchmark="resnet", success=True, semantics=TODAY, ruleset="5.1.0") -> rcp_convergence.RunConvergence:
    return rcp_convergence.run_convergence(_log(benchmark, bs, epochs, success), semantics, ruleset)


def test_run_convergence_reads_the_last_eval_before_run_stop():
    run = _run(256, [1.0, 2.0, 2.71828])
    assert (run.gbs, run.benchmark, run.converged, run.value, run.error) == (256, "resnet", True, 2.718, None)
    failed = _run(256, [1.0], success=False)
    assert not failed.converged and failed.value == 1e9


def test_run_convergence_samples_count_and_stable_diffusion():
    lines = [_line("submission_benchmark", "llama2_70b_lora"), _line("global_batch_size", 8),
             _line("eval_accuracy", 0.93, samples_count=3072, epoch_num=0.5), _line("run_stop", None, status="success")]
    assert rcp_convergence.run_convergence(lines, TODAY, "5.1.0").value == 3072
    sd = [_line("submission_benchmark", "stable_diffusion"), _line("global_batch_size", 512)]
    for step, fid, clip in [(1000, 95.0, 0.2), (2000, 80.0, 0.1), (3000, 85.0, 0.16), (4000, 70.0, 0.2)]:
        sd += [_line("eval_accuracy", fid, metric="FID", samples_count=step, step_num=step // 10),
               _line("eval_accuracy", clip, metric="CLIP", samples_count=step, step_num=step // 10)]
    sd.append(_line("run_stop", None, status="success"))
    assert rcp_convergence.run_convergence(sd, TODAY, "4.0.0").value == 3000  # the first step passing FID <= 90 and CLIP >= 0.15
    assert rcp_convergence.run_convergence(sd, TODAY, "3.1.0").value == 300  # 3.1.0 counts in step_num


def test_run_convergence_errors_as_the_checker_raises():
    no_eval = [_line("submission_benchmark", "resnet"), _line("run_stop", None, status="success")]
    assert rcp_convergence.run_convergence(no_eval, TODAY, "5.1.0").error  # conv_epoch unbound
    bad_json = [":::MLLOG {\"key\": \"global_batch_size\", broken"]
    assert rcp_convergence.run_convergence(bad_json, TODAY, "5.1.0").error
    # a line the project's parser keeps but the checker never reads does not matter
    assert rcp_convergence.run_convergence([":::MLLOG {broken, not read}"] + _log("ssd", 32, 3.0), TODAY, "5.1.0").error is None


def test_parsed_lines_read_as_text_lines():
    text = _log("resnet", 3264, [10.0, 20.5]) + [_line("eval_error", 0.1, epoch_num=21.25)]
    parsed = parse_log("\n".join(text).encode(), MLLOG).lines
    assert rcp_convergence.run_convergence(parsed, TODAY, "5.1.0") == rcp_convergence.run_convergence(text, TODAY, "5.1.0")


def test_rcp_lines_cut_like_the_checker():
    data = (b"[1,0]<stdout>:" + _line("global_batch_size", 16).encode() + b"\r\n"
            + _line("train_loss", 1.0).encode() + b"\r"
            + b"junk :::MLLOG x :::MLLOG " + json.dumps({"key": "run_stop", "metadata": {"status": "success"}}).encode()
            + b"\n run_stop without the token\n")
    lines = rcp_convergence.rcp_lines(data)
    assert lines == [_line("global_batch_size", 16), ':::MLLOG {"key": "run_stop", "metadata": {"status": "success"}}']


def test_old_releases_read_a_folder_in_one_pass():
    old = rcp_semantics.RcpSemantics.from_checker_source(RELEASES["2.1.0"])
    first = rcp_convergence.run_convergence(_log(None, 64, 7.0), old, "2.1.0", benchmark_hint="resnet")
    second = rcp_convergence.run_convergence([_line("run_stop", None, status="success")], old, "2.1.0", benchmark_hint="resnet")
    assert first.stops == ((True, 7.0),) and second.stops == ((True, None),)  # the value carries over
    files = {"training_2.1.0/rcps_resnet.json": _rcp_file("resnet", {64: [6.0, 6.5, 7.0, 7.0, 7.5]})}
    files["training_2.1.0/rcps_bert.json"] = _rcp_file("bert", {64: [1.0, 1.0, 1.0]})
    files["training_2.1.0/rcps_unet3d.json"] = _rcp_file("unet3d", {64: [1.0] * 10})
    files["training_2.1.0/rcps_llama31_405b.json"] = _rcp_file("llama31_405b", {64: [1.0] * 3})
    files["training_2.1.0/rcps_stable_diffusion.json"] = _rcp_file("stable_diffusion", {64: [1.0] * 3})
    tables = rcp_records.rcp_tables(files, "training", "2.1.0", old)
    verdict = rcp.check_result([first, second, first], tables, benchmark_folder="resnet")
    assert verdict.message == "RCP found" and verdict.samples_to_converge == 7.0
    # a folder whose name has no records (minigo) finds none; 1.1 reads eval_error when a log has one
    assert rcp.check_result([first] * 3, tables, benchmark_folder="minigo").label == "No RCP"
    errors = rcp_semantics.RcpSemantics.from_checker_source(RELEASES["1.1.0-rc4"])
    log = _log(None, 64, 7.0)[:-1] + [_line("eval_error", 0.1, epoch_num=8.0), _line("run_stop", None, status="success")]
    assert rcp_convergence.run_convergence(log, errors, "1.1.0", benchmark_hint="resnet").stops == ((True, 8.0),)


# ------------------------------------------------------------------------------------------- verdicts

def _rcp_file(benchmark: str, points: dict, unit: str = "Epochs to converge") -> str:
    return json.dumps({f"{benchmark}_ref_{bs}": {"Benchmark": benchmark, "BS": bs, "Hyperparams": {}, unit: epochs}
                       for bs, epochs in points.items()})


SPREAD = [-1.0, -0.5, -0.25, 0.0, 0.0, 0.0, 0.0, 0.25, 0.5, 1.0]  # olympic mean 0, stdev 0.55

RESNET = {  # RCP means 12 (BS 16), 20 (BS 32: slower than the line from 16 to 64, pruned), 22 (BS 64), 13 (BS 8: pruned)
    bs: [mean + d for d in SPREAD] for bs, mean in ((8, 13.0), (16, 12.0), (32, 20.0), (64, 22.0))
}


@pytest.fixture
def tables():
    return rcp_records.rcp_tables({"training_5.1.0/rcps_resnet.json": _rcp_file("resnet", RESNET)}, "training", "5.1.0", TODAY)


def test_rcp_statistics_and_pruning(tables):
    full = {r.bs: r for r in tables.records("resnet")}
    assert full[16].mean == 12.0 and full[16].stdev == rcp_numerics.np_std(RESNET[16])
    assert full[16].min_epochs == pytest.approx(
        rcp_numerics.min_acceptable_mean(12.0, full[16].stdev, 8, 5), rel=0) and full[16].min_epochs < 12.0
    assert full[16].max_speedup == full[16].mean / full[16].min_epochs
    assert [r.bs for r in tables.records("resnet", pruned=True)] == [16, 64]


def _verdict(tables, bs, epochs, n=5, **kwargs) -> rcp.RcpVerdict:
    runs = [_run(bs, e) for e in (epochs if isinstance(epochs, list) else [epochs] * n)]
    return rcp.check_result(runs, tables, **kwargs)


def test_rcp_found(tables):
    passed = _verdict(tables, 16, 11.5)
    assert (passed.passed, passed.message, passed.label, passed.gbs, passed.samples_to_converge) == \
        (True, "RCP found", "Pass", 16.0, 11.5)
    assert passed.norm_factor == 12.0 / 11.5 == passed.scaling_written and not passed.scaling_deleted
    slower = _verdict(tables, 16, 13.0)
    assert slower.passed and slower.norm_factor == 1.0 and slower.scaling_written is None and slower.scaling_deleted
    failed = _verdict(tables, 16, 5.0)
    assert (failed.passed, failed.label, failed.scaling_written) == (False, "Fail", None)
    assert failed.norm_factor == 12.0 / 5.0  # returned, not written


def test_interpolation_uses_pruned_rcps(tables):
    verdict = _verdict(tables, 32, 15.0)
    assert (verdict.passed, verdict.message, verdict.label) == (True, "RCP Interpolation", "Pass")
    assert verdict.record.interpolated and verdict.record.mean == rcp_numerics.np_interp(32, 16, 64, 12.0, 22.0)
    assert verdict.norm_factor == verdict.record.mean / 15.0 == verdict.scaling_written
    assert _verdict(tables, 32, 9.0).label == "Interp. Fail"
    assert _verdict(tables, 32, 17.0, rcp_pass="full_rcps").message == "RCP found"


def test_batch_sizes_outside_the_rcps(tables):
    above = _verdict(tables, 128, 30.0)
    assert (above.passed, above.message, above.label) == (False, "Missing RCP, please submit RCP with BS = 128", "Missing")
    assert above.norm_factor == 1.0 and not above.scaling_deleted
    below = _verdict(tables, 12, 12.5)  # compared with the smallest pruned RCP (BS 16)
    assert (below.passed, below.message, below.label) == \
        (True, "RCP not found but slower convergence on smaller batch size", "Pass")
    fast = _verdict(tables, 12, 3.0)
    assert (fast.passed, fast.message, fast.label) == (False, "Missing RCP, please submit RCP with BS = 12", "Missing")


def test_checker_messages_before_any_rcp(tables):
    no_bs = rcp.check_result([_run(None, 12.0)] * 5, tables)
    assert (no_bs.passed, no_bs.message, no_bs.label, no_bs.gbs, no_bs.samples_to_converge) == \
        (False, "Could not detect global_batch_size", "Unknown state", -1.0, 12.0)
    two_failed = [_run(16, 12.0)] * 3 + [_run(16, 12.0, success=False)] * 2
    insufficient = rcp.check_result(two_failed, tables)
    assert (insufficient.message, insufficient.label, insufficient.gbs, insufficient.samples_to_converge) == \
        ("Insufficient convergence", "Unknown state", 16.0, None)
    one_failed = rcp.check_result([_run(16, 11.5)] * 4 + [_run(16, 11.5, success=False)], tables)
    assert one_failed.passed and one_failed.samples_to_converge == 11.5  # dropped as the slowest


def test_samples_to_converge_is_the_summarizers_olympic_mean(tables):
    verdict = _verdict(tables, 16, [11.0, 12.0, 13.0, 14.0, 100.0, 1.0])
    assert verdict.samples_to_converge == 12.5


def test_what_the_summarizer_leaves_empty(tables):
    no_file = rcp.check_result([_run(16, 10.0, benchmark="ssd")] * 5, tables)
    assert (no_file.passed, no_file.label, no_file.gbs, no_file.samples_to_converge) == (None, None, None, None)
    assert "rcps_ssd.json" in no_file.message
    unknown = rcp.check_result([_run(16, 10.0, benchmark="minigo")] * 5, tables)
    assert unknown.passed is None and "minigo" in unknown.message
    mixed = rcp.check_result([_run(16, 10.0), _run(32, 10.0)], tables)  # batch sizes differ: no benchmark
    assert mixed.passed is None and mixed.label is None
    other_ruleset = rcp.check_result([_run(16, 10.0)] * 5, rcp_records.rcp_tables({}, "training", "0.7.0", TODAY))
    assert other_ruleset.passed is None and "0.7.0" in other_ruleset.message


def test_no_rcp_label():
    old = rcp_semantics.RcpSemantics.from_checker_source(RELEASES["1.0.0"])
    files = {f"1.0.0/rcps_{b}.json": _rcp_file(b, {64: [5.0, 6.0, 7.0]}) for b in ("bert", "dlrm", "unet3d")}
    run = rcp_convergence.run_convergence(_log(None, 64, 6.0), old, "1.0.0", benchmark_hint="minigo")
    verdict = rcp.check_result([run] * 5, rcp_records.rcp_tables(files, "training", "1.0.0", old), benchmark_folder="minigo")
    assert (verdict.passed, verdict.message, verdict.label) == (False, "Cannot find any RCPs", "No RCP")


def test_llama31_405b_speedup_adjustment():
    points = {1152: [300000.0 + 20000.0 * d for d in SPREAD]}
    def log(samples: int) -> list[str]:
        return [_line("submission_benchmark", "llama31_405b"), _line("global_batch_size", 1152),
                _line("eval_accuracy", 5.6, samples_count=samples), _line("run_stop", None, status="success")]

    runs = {ruleset: [rcp_convergence.run_convergence(log(s), TODAY, ruleset) for s in (250000, 260000, 265000)]
            for ruleset in ("4.1.0", "5.0.0")}
    verdicts = {}
    for ruleset in ("4.1.0", "5.0.0"):
        files = {f"training_{ruleset}/rcps_llama31_405b.json": _rcp_file("llama31_405b", points)}
        verdicts[ruleset] = rcp.check_result(runs[ruleset], rcp_records.rcp_tables(files, "training", ruleset, TODAY))
    record = verdicts["4.1.0"].record
    assert 260000 < record.min_epochs < 260000 + 46080
    assert verdicts["4.1.0"].label == "Fail"  # the plain bound
    assert verdicts["5.0.0"].label == "Pass"  # 46080 samples lower from 5.0.0 on
    assert verdicts["5.0.0"].record.max_speedup == record.mean / (record.min_epochs - 46080)


def test_installed_rcps_as_the_checker_computes_them():
    root = resources.files("mlperf_logging.rcp_checker")
    files = {f"training_5.1.0/{p.name}": p.read_text() for p in root.joinpath("training_5.1.0").iterdir()
             if p.name.startswith("rcps_")}
    tables = rcp_records.rcp_tables(files, "training", "5.1.0", TODAY)
    records = {r.name: r for r in tables.records("llama2_70b_lora")}
    ref = records["llama2_70b_lora_ref_8"]  # the package's own figures (numpy, scipy)
    assert (ref.mean, ref.stdev) == (3178.6666666666665, 299.91358755481554)
    assert ref.min_epochs == pytest.approx(2960.6339616775513, rel=1e-12)
    assert records["llama2_70b_lora_ref_128"].min_epochs == pytest.approx(10649.842998504639, rel=1e-12)
    assert [r.name for r in tables.records("llama2_70b_lora", pruned=True)] == [
        "llama2_70b_lora_ref_8", "llama2_70b_lora_ref_16", "llama2_70b_lora_ref_128"]


@pytest.mark.parametrize("release,norm,deleted", [("2.0.0-rc4", False, False), ("2.1.0", True, False),
                                                  ("4.0.0-rc3", True, False), ("5.1.0-rc4", True, True)])
def test_scaling_file_by_release(release, norm, deleted):
    """2.1 writes the factor into scaling.json, 5.1 also deletes a stale one first; before 2.1 none."""
    semantics = rcp_semantics.RcpSemantics.from_checker_source(RELEASES[release])
    ruleset = sorted(semantics.rulesets)[-1]
    files = {f"training_{ruleset}/rcps_{b}.json": _rcp_file(b, RESNET if b == "resnet" else {16: [1.0] * 5})
             for b in semantics.benchmarks("training")}
    tables = rcp_records.rcp_tables(files, "training", ruleset, semantics)
    fast = rcp.check_result([_run(16, 11.8, semantics=semantics, ruleset=ruleset)] * 5, tables, benchmark_folder="resnet")
    slow = rcp.check_result([_run(16, 13.0, semantics=semantics, ruleset=ruleset)] * 5, tables, benchmark_folder="resnet")
    assert fast.passed and slow.passed
    factor = 12.0 / rcp_numerics.np_mean([11.8] * 3)  # the olympic mean of 5 runs
    assert fast.norm_factor == (factor if norm else 1.0) and fast.scaling_written == (factor if norm else None)
    assert slow.scaling_written is None and slow.scaling_deleted is deleted
    assert rcp.check_result([_run(16, 11.5, semantics=semantics, ruleset=ruleset)] * 5, tables, benchmark_folder="resnet",
                            set_scaling=False).scaling_written is None


def test_rcp_pass_must_be_one_the_checker_knows(tables):
    verdict = _verdict(tables, 16, 11.5, rcp_pass="full_rcp")  # check_directory's own default: UnboundLocalError
    assert verdict.passed is None and verdict.label is None
