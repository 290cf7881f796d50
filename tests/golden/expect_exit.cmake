# Runs COMMAND (its arguments joined by '|') and requires exit status CODE and, when given, output
# matching REGEX. Usage: cmake -DCOMMAND=a|b|c -DCODE=2 [-DREGEX=...] -P expect_exit.cmake
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT code STREQUAL CODE)
  message(FATAL_ERROR "exit status ${code}, expected ${CODE}")
endif()
if(DEFINED REGEX AND NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "the output does not match '${REGEX}'")
endif()
