# SPDX-License-Identifier: Apache-2.0
# cmake -DTOOL=<sluice> -DHELP2MAN=<help2man> -DVERSION=<x.y.z> -DOUT=<dir> -P man.cmake: writes
# OUT/sluice.1 from `sluice --help` and OUT/sluice-<command>.1 from `sluice <command> --help` for
# each command that `sluice --help` lists ("  <command>  <what it does>"), then OUT/stamp.
execute_process(COMMAND ${TOOL} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TOOL} --help failed (${rc})")
endif()
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/bin)
string(REGEX MATCH "^sluice [^:]*: ([^\n]*)" _ "${help}")
set(what "${CMAKE_MATCH_1}")
string(REPLACE "\n" ";" lines "${help}")
set(see_also "")
foreach(line ${lines})
  if(NOT line MATCHES "^  ([a-z]+) +(.+)$")
    continue()
  endif()
  set(cmd ${CMAKE_MATCH_1})
  set(desc ${CMAKE_MATCH_2})
  # help2man names the page after the program it runs: a script that runs `sluice <command>`
  set(wrapper ${OUT}/bin/sluice-${cmd})
  file(WRITE ${wrapper} "#!/bin/sh\nexec \"${TOOL}\" ${cmd} \"$@\"\n")
  file(CHMOD ${wrapper} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  file(WRITE ${OUT}/bin/sluice-${cmd}.h2m "[SEE ALSO]\n.BR sluice (1)\n")
  execute_process(COMMAND ${HELP2MAN} --no-info --version-string=${VERSION} --name=${desc}
                          --include=${OUT}/bin/sluice-${cmd}.h2m --output=${OUT}/sluice-${cmd}.1
                          ${wrapper} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "help2man for sluice ${cmd} failed (${rc})")
  endif()
  list(APPEND see_also ".BR sluice-${cmd} (1)")
endforeach()
if(NOT see_also)
  message(FATAL_ERROR "no commands in `${TOOL} --help`:\n${help}")
endif()
list(JOIN see_also ",\n" see_also)
file(WRITE ${OUT}/bin/sluice.h2m "[SEE ALSO]\n${see_also}\n")
execute_process(COMMAND ${HELP2MAN} --no-info --version-string=${VERSION} --name=${what}
                        --include=${OUT}/bin/sluice.h2m --output=${OUT}/sluice.1 ${TOOL}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man for sluice failed (${rc})")
endif()
file(WRITE ${OUT}/stamp "")
