"""`python -m gen probe`: what bounds a w8a8_wgmma instance's K loop.

A probe build compiles an instance with one part of its K loop left out
(variants.py); `probe run` times the built cubin and its probe builds in
alternation at the same points, swapped into the runtime one at a time
(swap.py), in bursts as gen bench times them or back to back for seconds
with the SM clock and board power sampled (timing.py). The probe builds'
outputs are wrong by design: their times are bounds, not results.
"""
