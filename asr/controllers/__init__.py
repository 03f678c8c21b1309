"""Controllers run inside the C rollout loop (csrc/interaction): interaction control at a site,
admittance and direct force, with their FSM (interaction) and the control laws' parameters
(laws)."""

from asr.controllers.interaction import Admittance, DirectForce

__all__ = ["Admittance", "DirectForce"]
