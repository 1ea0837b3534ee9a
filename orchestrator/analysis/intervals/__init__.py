"""Interval algebra: sets of [start, end) spans, their union and cover, and each instant of a thread's time given
to one share. Pure: arrays in, arrays out."""
