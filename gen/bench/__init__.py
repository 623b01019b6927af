"""`python -m gen bench`: every arm through the runtime against its peers
(cuBLASLt block scaling, torch bf16, a device copy), timed in one process.
torch is needed here only; the runtime never imports it."""
