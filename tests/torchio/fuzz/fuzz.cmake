# libFuzzer target for the torch checkpoint reader (needs clang; enable with
# -DOSCAR_BUILD_FUZZ=ON). The reader is compiled into the target with
# coverage instrumentation rather than linked from oscar_torchio.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(STATUS "torchio_fuzz: skipped (libFuzzer needs clang)")
  return()
endif()
file(GLOB OSCAR_TORCHIO_FUZZ_SOURCES ${CMAKE_SOURCE_DIR}/src/torchio/*.cpp)
add_executable(torchio_fuzz ${CMAKE_CURRENT_LIST_DIR}/torchio_fuzz.cpp ${OSCAR_TORCHIO_FUZZ_SOURCES}
                            ${CMAKE_SOURCE_DIR}/src/core/mapped_file.cpp ${CMAKE_SOURCE_DIR}/src/core/huge_pages.cpp)
target_compile_options(torchio_fuzz PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -g)
target_link_options(torchio_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
