# Where the tests find real data (tokenizers, templates, vocabularies, the
# published rotations, stories260K): see testdata/README.md.
#
# Two sources, file by file, the first that has a file wins:
#   OSCAR_TEST_DATA_DIR    the copy inside the repository (what may be redistributed)
#   OSCAR_SHARED_DATA_DIR  the larger shared set beside the checkout, for the
#                          few files the repository does not carry (optional)
# Both are merged into ONE folder of symbolic links in the build tree,
# OSCAR_TEST_DATA, which every test and benchmark receives as the macro of
# the same name. A test whose file is in neither source skips with a message.
# Changing either source needs only a re-run of cmake, not a rebuild: the
# binaries know the merged folder, not the sources.
set(OSCAR_TEST_DATA_DIR "${CMAKE_SOURCE_DIR}/testdata" CACHE PATH
    "Real test data carried by the repository (first choice for every file)")
get_filename_component(_oscar_shared_default "${CMAKE_SOURCE_DIR}/../shared/data" ABSOLUTE)
set(OSCAR_SHARED_DATA_DIR "${_oscar_shared_default}" CACHE PATH
    "Optional larger data set, used for files the repository does not carry")

set(OSCAR_TEST_DATA "${CMAKE_BINARY_DIR}/testdata")
set(OSCAR_SHARED_DATA "${OSCAR_TEST_DATA}")  # the old name, for CMake code written before testdata/
file(REMOVE_RECURSE "${OSCAR_TEST_DATA}")
file(MAKE_DIRECTORY "${OSCAR_TEST_DATA}")

set(_oscar_data_from_repo 0)
set(_oscar_data_from_shared 0)
foreach(_src IN ITEMS "${OSCAR_TEST_DATA_DIR}" "${OSCAR_SHARED_DATA_DIR}")
  if(NOT IS_DIRECTORY "${_src}")
    continue()
  endif()
  file(GLOB_RECURSE _files CONFIGURE_DEPENDS RELATIVE "${_src}" "${_src}/*")
  foreach(_rel IN LISTS _files)
    if(_rel MATCHES "(^|/)README\\.md$" OR _rel MATCHES "^LICENSES/" OR EXISTS "${OSCAR_TEST_DATA}/${_rel}" OR IS_SYMLINK "${OSCAR_TEST_DATA}/${_rel}")
      continue()
    endif()
    get_filename_component(_dir "${OSCAR_TEST_DATA}/${_rel}" DIRECTORY)
    file(MAKE_DIRECTORY "${_dir}")
    file(CREATE_LINK "${_src}/${_rel}" "${OSCAR_TEST_DATA}/${_rel}" SYMBOLIC)
    if(_src STREQUAL OSCAR_TEST_DATA_DIR)
      math(EXPR _oscar_data_from_repo "${_oscar_data_from_repo} + 1")
    else()
      math(EXPR _oscar_data_from_shared "${_oscar_data_from_shared} + 1")
    endif()
  endforeach()
endforeach()
message(STATUS "Test data in ${OSCAR_TEST_DATA}: ${_oscar_data_from_repo} files from "
               "${OSCAR_TEST_DATA_DIR}, ${_oscar_data_from_shared} more from ${OSCAR_SHARED_DATA_DIR}")
