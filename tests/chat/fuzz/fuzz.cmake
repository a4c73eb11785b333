# libFuzzer target for the chat template engine (needs clang; enable with
# -DOSCAR_BUILD_FUZZ=ON). The engine is compiled into the target with
# coverage instrumentation rather than linked from oscar_chat.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(STATUS "jinja_fuzz: skipped (libFuzzer needs clang)")
  return()
endif()
find_package(nlohmann_json 3 REQUIRED)
file(GLOB OSCAR_CHAT_FUZZ_SOURCES ${CMAKE_SOURCE_DIR}/src/chat/*.cpp)
add_executable(jinja_fuzz ${CMAKE_CURRENT_LIST_DIR}/jinja_fuzz.cpp ${OSCAR_CHAT_FUZZ_SOURCES})
target_compile_options(jinja_fuzz PRIVATE -fsanitize=fuzzer,address,undefined -g)
target_link_options(jinja_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_libraries(jinja_fuzz PRIVATE oscar_core nlohmann_json::nlohmann_json)
