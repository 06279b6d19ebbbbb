"""bench/gpu_check.sh: its CPU path end to end, and the FLOPs it divides by."""

import json
import os
import subprocess
import sys

import pytest

from bench import gpu_check

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _config(path):
    from bert_tf.modeling.config import BertConfig
    return BertConfig.from_json_file(os.path.join(REPO_ROOT, "configs", path))


def _table_rows(stdout):
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] in gpu_check.CHECKS:
            rows[cells[0]] = cells
    return rows


@pytest.mark.slow
def test_cpu_path_runs_end_to_end_and_prints_three_rows(tmp_path):
    output_json = tmp_path / "results.json"
    env = dict(os.environ, GPU_CHECK_PYTHON=sys.executable, CUDA_VISIBLE_DEVICES="",
               GPU_CHECK_TIMEOUT="120")
    proc = subprocess.run(
        ["bash", os.path.join(REPO_ROOT, "bench", "gpu_check.sh"), "--tiny", "--peak_tflops=2",
         "--output_json=%s" % output_json],
        cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    rows = _table_rows(proc.stdout)
    assert sorted(rows) == sorted(gpu_check.CHECKS), proc.stdout
    header = [c.strip() for c in proc.stdout.split("| check |")[1].split("\n")[0].split("|")]
    seq_per_sec = header.index("seq/s") + 1
    mfu = header.index("MFU") + 1
    for check, cells in rows.items():
        assert cells[2:4] == ["fp32", "no"], cells  # the CPU path: float32, no XLA
        assert float(cells[seq_per_sec]) > 0, cells
        assert cells[mfu].endswith("%") and float(cells[mfu][:-1]) > 0, cells
    assert "MFU against a peak of 2 TFLOP/s" in proc.stdout
    results = json.loads(output_json.read_text())
    by_check = {row["check"]: row for row in results["rows"]}
    # The printed rate is the one measured: timed examples over timed seconds.
    for check, row in by_check.items():
        assert row["seq_per_sec"] == pytest.approx(
            row["timed_steps"] * row["batch_size"] / row["timed_seconds"])
        assert float(rows[check][seq_per_sec]) == pytest.approx(row["seq_per_sec"], abs=0.06)
    assert by_check["pretraining"]["timed_steps"] >= 1


def test_bert_base_parameters_and_forward_flops_by_hand():
    base = _config("uncased_L-12_H-768_A-12.json")
    # BERT-base: 109,482,240 parameters in the encoder, 110,106,428 with the
    # pre-training heads (bench/pretraining_bench.py counts them on the model).
    assert gpu_check.num_parameters(base, None) == 109482240
    assert gpu_check.num_parameters(base, "pretraining") == 110106428
    assert gpu_check.encoder_matmul_parameters(base) == 12 * (4 * 768 * 768 + 2 * 768 * 3072)

    # The forward pass of one 128-token sequence, one matmul at a time.
    s, h, i = 128, 768, 3072
    per_layer = (3 * 2 * s * h * h      # query, key, value
                 + 2 * s * s * h        # scores: [S, H] x [H, S] over all heads
                 + 2 * s * s * h        # probs x values
                 + 2 * s * h * h        # attention output dense
                 + 2 * s * h * i        # intermediate
                 + 2 * s * i * h)       # output
    assert per_layer == 1862270976
    pooler_and_classifier = 2 * h * h + 2 * h * 2
    forward = 12 * per_layer + pooler_and_classifier
    assert gpu_check.model_flops(base, 128, "classifier", training=False) == forward
    assert forward / 1e9 == pytest.approx(22.35, abs=0.01)
    assert gpu_check.model_flops(base, 128, "classifier") == 3 * forward

    # Pre-training: the MLM head on the 20 masked positions only, and NSP.
    mlm = 20 * (2 * h * h + 2 * h * 30522)
    assert gpu_check.model_flops(base, 128, "pretraining", 20, training=False) == (
        12 * per_layer + 2 * h * h + mlm + 2 * h * 2)


def test_bert_large_training_flops_follow_six_n_tokens():
    large = _config("uncased_L-24_H-1024_A-16.json")
    n = gpu_check.encoder_matmul_parameters(large)
    assert n == 24 * 12 * 1024 * 1024 and round(n / 1e6) == 302
    flops = gpu_check.model_flops(large, 128, "pretraining", 20)
    attention = 3 * 24 * 4 * 128 * 128 * 1024
    heads = 3 * (2 * 1024 * 1024 + 20 * (2 * 1024 * 1024 + 2 * 1024 * 30522) + 2 * 1024 * 2)
    assert flops == 6 * n * 128 + attention + heads


def test_parameter_formula_matches_the_built_tiny_models():
    from bert_tf.modeling.config import BertConfig
    from bert_tf.models import BertClassifier
    from bert_tf.models import BertPretrainer
    config = BertConfig.from_dict(dict(gpu_check.TINY_CONFIG))
    for model, head in ((BertPretrainer(config), "pretraining"),
                        (BertClassifier(config, 3), "classifier")):
        built = sum(int(v.numpy().size) for v in model.trainable_variables)
        assert gpu_check.num_parameters(config, head, num_labels=3) == built, head


@pytest.mark.parametrize("name, peak", [
    ("NVIDIA H100 80GB HBM3", 989.0), ("NVIDIA H100 PCIe", 756.0), ("NVIDIA H200", 989.0),
    ("NVIDIA A100-SXM4-80GB", 312.0), ("NVIDIA A10", 125.0), ("NVIDIA L4", 121.0),
    ("NVIDIA L40S", 362.0), ("Tesla V100-SXM2-16GB", 125.0), ("NVIDIA A10G", None),
    ("Some Future GPU", None), (None, None)])
def test_peak_table_matches_whole_names(name, peak):
    assert gpu_check.peak_tflops_for(name) == peak


def test_unknown_peak_says_mfu_needs_the_flag():
    rows = [{"check": "inference", "model": "L-2 H-32", "precision": "fp32", "xla": False,
             "batch_size": 8, "seq_length": 128, "flops_per_seq": 1e9, "seq_per_sec": 10.0}]
    table = gpu_check.format_table(rows, None, "NVIDIA A10G")
    assert "| n/a |" in table
    assert table.splitlines()[-1] == "MFU needs --peak_tflops: no peak is known for NVIDIA A10G."
    assert "| 1.0% |" in gpu_check.format_table(rows, 1.0, "x")


def test_bad_flag_is_one_line_and_exit_2(capsys):
    assert gpu_check.main(["--tiny", "--steps=0"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --steps must be a positive integer, got 0\n"


def test_missing_config_file_names_the_flag(tmp_path, capsys):
    missing = str(tmp_path / "missing.json")
    assert gpu_check.main(["--large_config_file=%s" % missing, "--steps=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --large_config_file: bert_config_file %s: no such file"
                          % missing)
    assert len(err.splitlines()) == 1
