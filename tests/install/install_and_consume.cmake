# cmake -P script behind install.consumer_builds_and_passes: installs BUILD_DIR into WORK_DIR/prefix,
# configures and builds CONSUMER_DIR against it (same generator, build type and compiler), runs the
# installed kda-oracle once and the consumer's test. Any step failing fails the test.
function(step what)
  message(STATUS "install test: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}): ${ARGN}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${prefix} ${consumer_build})

step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
step("the installed command" ${prefix}/bin/kda-oracle check --list)
step("configure the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${consumer_build} -G ${GENERATOR}
     -D CMAKE_BUILD_TYPE=${BUILD_TYPE} -D CMAKE_CXX_COMPILER=${CXX_COMPILER} -D CMAKE_PREFIX_PATH=${prefix})
step("build the consumer" ${CMAKE_COMMAND} --build ${consumer_build})
step("run the consumer's test" ${consumer_build}/my_kernel_test)
