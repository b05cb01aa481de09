#pragma once
// The gate's stand-in for the header a CUDA build of torch generates and a CPU build lacks
// (c10/cuda/CUDAMacros.h includes it): with it, a source that includes torch's CUDA headers
// (ATen/cuda/CUDAContext.h) compiles on a CPU machine for its static figures. The value is a CUDA
// build's: c10_cuda is a shared library.
#define C10_CUDA_BUILD_SHARED_LIBS
