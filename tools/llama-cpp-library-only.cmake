# Included by llama.cpp's own project() call while llama-cpp-python builds it (the
# Makefile passes -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>).
#
# llama-cpp-python forces LLAMA_BUILD_COMMON on, which compiles llama.cpp's common
# library (argument parsing, chat parsers, downloads over HTTP) and installs it beside
# the package, where nothing loads it: samplescope calls libllama and libggml only,
# through llama-cpp-python. That library is half of the whole compile on 2 cores. A
# plain variable set here, in llama.cpp's directory, hides the forced cache entry from
# it, so common is neither built nor installed.
set(LLAMA_BUILD_COMMON OFF)
