# Runs COMMAND (its arguments joined by '|') and requires exit status CODE and, when given, output
# matching REGEX; with NO_CARRIAGE_RETURN, output without a '\r' (a line redrawn in place, which a log
# shows as one endless line). Usage: cmake -DCOMMAND=a|b|c -DCODE=2 [-DREGEX=...] [-DNO_CARRIAGE_RETURN=1]
# -P expect_exit.cmake
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT code STREQUAL CODE)
  message(FATAL_ERROR "exit status ${code}, expected ${CODE}")
endif()
if(DEFINED REGEX AND NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "the output does not match '${REGEX}'")
endif()
if(NO_CARRIAGE_RETURN AND "${out}${err}" MATCHES "\r")
  message(FATAL_ERROR "the output redraws a line with '\\r' where it is not a terminal")
endif()
