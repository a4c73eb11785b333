# The chat page (webui/, a Vite project) compiled into oscar-server as a
# generated C++ table (target oscar_webui_assets, see src/server/webui_assets.h).
#
# Where the files come from, in order:
#   1. node + npm found and webui/node_modules installed (scripts/setup-deps.sh
#      runs `npm ci` there): Vite builds them into the build folder whenever
#      webui/'s sources change;
#   2. a webui/dist built beforehand (`cd webui && npm ci && npm run build`);
#   3. neither: the table is empty, the C++ build still succeeds, and `/`
#      serves a page saying how to build the web UI.
set(OSCAR_WEBUI_DIR ${PROJECT_SOURCE_DIR}/webui)
set(OSCAR_WEBUI_CPP ${CMAKE_CURRENT_BINARY_DIR}/webui_assets.cpp)
find_program(OSCAR_NPM npm)
find_program(OSCAR_NODE node)

if(OSCAR_NPM AND OSCAR_NODE AND EXISTS ${OSCAR_WEBUI_DIR}/node_modules/.bin/vite)
  set(OSCAR_WEBUI_DIST ${CMAKE_BINARY_DIR}/webui-dist)
  file(GLOB_RECURSE _webui_sources CONFIGURE_DEPENDS ${OSCAR_WEBUI_DIR}/src/*)
  # A stamp, not index.html, is the output: a failed Vite build leaves no
  # index.html (see build_webui.cmake) and must not rerun on every build.
  add_custom_command(
    OUTPUT ${CMAKE_BINARY_DIR}/webui-dist.stamp
    COMMAND ${CMAKE_COMMAND} -DNPM=${OSCAR_NPM} -DSRC=${OSCAR_WEBUI_DIR} -DDIST=${OSCAR_WEBUI_DIST}
            -DSTAMP=${CMAKE_BINARY_DIR}/webui-dist.stamp -P ${PROJECT_SOURCE_DIR}/cmake/build_webui.cmake
    DEPENDS ${_webui_sources} ${OSCAR_WEBUI_DIR}/index.html ${OSCAR_WEBUI_DIR}/vite.config.js
            ${OSCAR_WEBUI_DIR}/package-lock.json ${PROJECT_SOURCE_DIR}/cmake/build_webui.cmake
    COMMENT "Building the web UI (vite build)"
    VERBATIM)
  set(_webui_inputs ${CMAKE_BINARY_DIR}/webui-dist.stamp)
  message(STATUS "web UI: built from webui/ by npm during the build and compiled into oscar-server")
elseif(EXISTS ${OSCAR_WEBUI_DIR}/dist/index.html)
  set(OSCAR_WEBUI_DIST ${OSCAR_WEBUI_DIR}/dist)
  file(GLOB_RECURSE _webui_inputs CONFIGURE_DEPENDS ${OSCAR_WEBUI_DIST}/*)
  message(STATUS "web UI: compiling the prebuilt webui/dist into oscar-server")
else()
  set(OSCAR_WEBUI_DIST "")
  set(_webui_inputs "")
  message(STATUS "web UI: NOT built (needs node, npm and `npm ci` in webui/; scripts/setup-deps.sh does that): "
                 "oscar-server will answer / with a page saying how to build it")
endif()

add_custom_command(
  OUTPUT ${OSCAR_WEBUI_CPP}
  COMMAND ${CMAKE_COMMAND} -DDIST_DIR=${OSCAR_WEBUI_DIST} -DOUT=${OSCAR_WEBUI_CPP}
          -P ${PROJECT_SOURCE_DIR}/cmake/embed_webui.cmake
  DEPENDS ${PROJECT_SOURCE_DIR}/cmake/embed_webui.cmake ${_webui_inputs}
  COMMENT "Embedding the web UI's files"
  VERBATIM)
add_library(oscar_webui_assets STATIC ${OSCAR_WEBUI_CPP})
target_include_directories(oscar_webui_assets PRIVATE ${PROJECT_SOURCE_DIR}/src)
# The tests compare what the server sends with these files.
set_property(GLOBAL PROPERTY OSCAR_WEBUI_DIST "${OSCAR_WEBUI_DIST}")
