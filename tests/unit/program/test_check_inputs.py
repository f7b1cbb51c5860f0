"""A run-once Pod's check inputs (components.command.GpuPodArgs.inputs): whatever changes the
check's result changes the digest, so the Pod is replaced and never re-read as this run."""

from __future__ import annotations

from dataclasses import replace

from components.command import GpuPodArgs, check_inputs

WHERE = ("default", "gpu-smoke")


def test_the_digest_follows_the_arguments_the_image_and_the_host_driver() -> None:
    args = GpuPodArgs(image="nvidia/cuda:12.4.1-base-ubuntu22.04", kubeconfig="", host_driver="580.159.04")
    base = args.inputs("smoke", WHERE, args.diagnosis_args())
    assert len(base) == 16 and base == args.inputs("smoke", WHERE, args.diagnosis_args())
    assert base != replace(args, timeout_seconds=301).inputs("smoke", WHERE, args.diagnosis_args())
    assert base != replace(args, image="nvidia/cuda:12.6.0-base-ubuntu22.04").inputs(
        "smoke", WHERE, args.diagnosis_args()
    )
    assert base != replace(args, host_driver="590.10.01").inputs("smoke", WHERE, args.diagnosis_args())
    changed = replace(args, host_max_cuda="13.0")
    assert base != changed.inputs("smoke", WHERE, changed.diagnosis_args())
    assert base != args.inputs("compute", WHERE, args.diagnosis_args())


def test_check_inputs_separates_its_parts() -> None:
    """No two argument lists give one digest by concatenation (parts are NUL-separated)."""
    assert check_inputs("smoke", WHERE, 300, ["ab", "c"]) != check_inputs("smoke", WHERE, 300, ["a", "bc"])
