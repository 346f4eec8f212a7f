"""Config section ``executor``: where the map tasks run (this machine's processes, or a Ray cluster)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ExecutorConfig(BaseModel):
    """Section ``executor`` (``evaluate``'s config) or key ``episodes.executor``; CLI flags override it."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    kind: Literal["local", "ray"] = Field(default="local", description="local processes or Ray tasks")
    jobs: int = Field(
        default=1, ge=1, le=1024, description="local: worker processes; ray without ray_address: CPUs of the "
        "Ray instance started on this machine"
    )
    ray_address: str | None = Field(
        default=None, description="None: start a Ray instance on this machine (loopback only); 'auto': join the one "
        "running here (`ray start --head`); HOST:PORT: a cluster's head (GCS) address; ray://HOST:PORT: Ray Client"
    )
    max_retries: int = Field(default=3, ge=0, le=100, description="re-runs of a task whose worker process died")
    memory_mb: int | None = Field(
        default=2048, ge=1, description="ray: memory reserved per task (the scheduler never packs more tasks on a "
        "node than its memory holds; Ray's memory monitor kills and retries a task of a node short of memory)"
    )
    temp_dir: str | None = Field(default=None, description="ray: session/log folder of a started instance")
