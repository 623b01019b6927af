"""fp8gen's generator: catalog -> render -> compile -> manifest."""

# Part of every cache key: bump when gen changes what it emits or how it builds.
GENERATOR_VERSION = "0.1.0"
