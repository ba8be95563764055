# cmake -DBUILD_DIR=... -DCONSUMER_DIR=... -DWORK_DIR=... -DGENERATOR=... -P install_consumer.cmake
# Installs BUILD_DIR into WORK_DIR/prefix, configures and builds CONSUMER_DIR against that
# prefix alone, runs its programs, and checks that the installed weft finds its workloads and
# that pkg-config describes the package.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# Only the prefix: no hint of the source or build tree reaches the consumer's configure.
run("configure the consumer"
    ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release -DWEFT_CONSUMER_STATIC=ON)
run("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer -j 2)
foreach(exe embed_shared embed_static)
  run("run ${exe}" ${WORK_DIR}/consumer/${exe})
  if(NOT last_output MATCHES "\nok\n")
    message(FATAL_ERROR "install_consumer: ${exe} did not print ok:\n${last_output}")
  endif()
  message(STATUS "install_consumer: ${exe} ran: ${last_output}")
endforeach()

# The installed program finds the suite in PREFIX/share/weft/workloads, not in the source tree.
run("installed weft bench --help" ${prefix}/bin/weft bench --help)
string(FIND "${last_output}" "${prefix}/share/weft/workloads" at)
if(at LESS 0)
  message(FATAL_ERROR "install_consumer: the installed weft bench's --workloads-dir default is "
                      "not ${prefix}/share/weft/workloads:\n${last_output}")
endif()
run("installed weft bench --write-graphs" ${prefix}/bin/weft bench softmax --policy none
    --write-graphs ${WORK_DIR}/graphs)
if(NOT EXISTS ${WORK_DIR}/graphs/softmax.json)
  message(FATAL_ERROR "install_consumer: the installed weft bench wrote no softmax.json")
endif()

find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  file(GLOB_RECURSE pc_files ${prefix}/*/weft.pc)
  list(GET pc_files 0 pc)
  get_filename_component(pc_dir ${pc} DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} ${pc_dir})
  run("pkg-config" ${PKG_CONFIG} --cflags --libs weft)
  if(NOT last_output MATCHES "-lweft")
    message(FATAL_ERROR "install_consumer: pkg-config weft says: ${last_output}")
  endif()
  message(STATUS "install_consumer: pkg-config weft: ${last_output}")
endif()
message(STATUS "install_consumer: ok")
