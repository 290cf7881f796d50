# Determinism: generating SUITE with one thread and with three gives byte-identical files.
# Usage: cmake -DORACLE=... -DSUITE=... -DDIR=... -P generate_twice.cmake
foreach(threads 1 3)
  execute_process(COMMAND ${ORACLE} golden generate --suite ${SUITE} --out ${DIR}/${SUITE}-${threads}.h5
                          --threads ${threads} RESULT_VARIABLE code)
  if(code)
    message(FATAL_ERROR "generate --suite ${SUITE} --threads ${threads} exited with ${code}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${DIR}/${SUITE}-1.h5 ${DIR}/${SUITE}-3.h5 RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "two generations of the ${SUITE} suite differ")
endif()
