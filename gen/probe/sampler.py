"""The SM clock and board power while work runs: nvidia-smi sampling every
20 ms in the background, read back per time window."""
from __future__ import annotations

import datetime
import shutil
import statistics
import subprocess
import tempfile
from typing import List, Optional, Tuple

FIELDS = "timestamp,clocks.sm,power.draw"
PERIOD_MS = 20


def smi_target(uuid: Optional[str], ordinal: int) -> str:
    """nvidia-smi's -i for the GPU CUDA calls `ordinal`: its UUID where
    known (nvidia-smi numbers GPUs its own way, which CUDA_VISIBLE_DEVICES
    does not change), else the ordinal."""
    if uuid:
        uuid = str(uuid)
        return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
    return str(ordinal)


class PowerSampler:
    """Samples the GPU nvidia-smi knows as `target` (smi_target)."""

    def __init__(self, target: str = "0"):
        smi = shutil.which("nvidia-smi")
        if smi is None:
            raise RuntimeError("sustained probes sample the clock and power with nvidia-smi, which is not on PATH")
        self._log = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen([smi, "-i", target, f"--query-gpu={FIELDS}", "--format=csv,noheader,nounits",
                                       "-lms", str(PERIOD_MS)], stdout=self._log, stderr=subprocess.DEVNULL)
        self.samples: List[Tuple[float, float, float]] = []

    def stop(self) -> None:
        """Ends the sampling and parses what it wrote (time, MHz, W)."""
        if self._proc is None:
            return
        self._proc.terminate()
        self._proc.wait()
        self._proc = None
        self._log.seek(0)
        for line in self._log:
            parts = [p.strip() for p in line.split(",")]
            try:
                # nvidia-smi prints local wall-clock time, as time.time() counts it
                ts = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                self.samples.append((ts, float(parts[1]), float(parts[2])))
            except (ValueError, IndexError):
                continue  # a header, a partial last line, or "[N/A]"
        self._log.close()

    def window(self, start: float, end: float) -> Tuple[Optional[float], Optional[float], int]:
        """Median SM clock (MHz) and board power (W) of the samples in
        [start, end] (time.time() seconds), and how many there were."""
        inside = [(c, p) for ts, c, p in self.samples if start <= ts <= end]
        if not inside:
            return None, None, 0
        return statistics.median(c for c, _ in inside), statistics.median(p for _, p in inside), len(inside)
