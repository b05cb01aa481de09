"""Facts about NVIDIA's tools and chips: C++ demangling, datasheet peaks, Nsight Compute metric names and reports."""
