# Requires two files to be byte-identical; on a difference prints MESSAGE.
# Usage: cmake -DA=... -DB=... -DMESSAGE=... -P compare_files.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${A} ${B} RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "${A} and ${B} differ.\n${MESSAGE}")
endif()
