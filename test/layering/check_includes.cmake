# cmake -DDIR=... -DFORBIDDEN=regex -DALLOWED=regex -P check_includes.cmake
# Fails, naming file, line and header, when a file under DIR includes a "quoted" header that
# matches FORBIDDEN and not ALLOWED (both regexes over the header path; ALLOWED may be empty).
file(GLOB_RECURSE files ${DIR}/*.h ${DIR}/*.cc)
set(bad "")
foreach(f ${files})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" header "${line}")
    if(header MATCHES "^(${FORBIDDEN})")
      if(ALLOWED STREQUAL "" OR NOT header MATCHES "^(${ALLOWED})$")
        string(APPEND bad "  ${f}: includes \"${header}\"\n")
      endif()
    endif()
  endforeach()
endforeach()
if(NOT bad STREQUAL "")
  message(FATAL_ERROR "layering: includes across a module boundary the architecture forbids:\n${bad}")
endif()
