"""gen reads HARDWARE.toml through the runtime's reader (one parser)."""
from runtime.hardware import Hardware, load_hardware  # noqa: F401
