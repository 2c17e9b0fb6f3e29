# cmake -DHELP2MAN=... -DPROGRAM=bin/NAME -DOUTPUT=NAME.1 -P help2man.cmake
# The page's NAME line is the summary after " - " on the first line of the program's --help.
execute_process(COMMAND ${PROGRAM} --help OUTPUT_VARIABLE help RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --help exited ${status}")
endif()
string(REGEX MATCH "^[^\n]*" first_line "${help}")
string(REGEX REPLACE "^[^ ]+ - " "" summary "${first_line}")
execute_process(COMMAND ${HELP2MAN} --no-info --section=1 --name=${summary} --output=${OUTPUT} ${PROGRAM}
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "help2man failed on ${PROGRAM}")
endif()
