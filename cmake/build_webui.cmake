# cmake -DNPM=<npm> -DSRC=<webui dir> -DDIST=<out dir> -DSTAMP=<file> -P build_webui.cmake
#
# Runs the web UI's Vite build. A failure (a broken or stale node_modules, an
# unsupported node) is a warning, not a failed C++ build: DIST is removed,
# and oscar-server then serves the page saying how to build the web UI.
execute_process(
  COMMAND "${NPM}" run --silent build -- --outDir "${DIST}" --emptyOutDir --logLevel warn
  WORKING_DIRECTORY "${SRC}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  file(REMOVE_RECURSE "${DIST}")
  message(WARNING "web UI: `npm run build` in ${SRC} failed (${rc}); oscar-server will serve a page saying how to "
                  "build it. Try `cd webui && npm ci`.\n${out}")
endif()
file(TOUCH "${STAMP}")
