# `kda-oracle golden import`: handwritten calls (tests/golden/calls) imported into one golden file
# and replayed by `golden verify`; an invalid call becomes a contract case.
set(calls ${CMAKE_CURRENT_SOURCE_DIR}/calls)
set(imported ${CMAKE_CURRENT_BINARY_DIR}/imported.h5)
target_compile_definitions(call_import_test PRIVATE KDA_CALLS_DIR="${calls}")

kda_golden_exit_test(import_varlen_prefill 0 "written as case 'varlen_prefill'"
                     ${oracle} golden import ${calls}/varlen_prefill.json --out ${imported})
set(previous golden.import_varlen_prefill)
set(expect_pooled_decode "written as case 'pooled_decode'")
set(expect_verify_table "written as case 'verify_table'")
set(expect_decreasing_cu_seqlens "breaks contract rule cu_seqlens_monotonic.*contract case 'decreasing_cu_seqlens'")
foreach(call pooled_decode verify_table decreasing_cu_seqlens)
  kda_golden_exit_test(import_${call} 0 "${expect_${call}}"
                       ${oracle} golden import ${calls}/${call}.json --out ${imported} --append)
  set_tests_properties(golden.import_${call} PROPERTIES DEPENDS ${previous} FIXTURES_REQUIRED golden_import_first)
  set(previous golden.import_${call})
endforeach()
set_tests_properties(golden.import_varlen_prefill PROPERTIES FIXTURES_SETUP golden_import_first)
set_tests_properties(golden.import_decreasing_cu_seqlens PROPERTIES FIXTURES_SETUP golden_imported)
foreach(kernel ref-fp64 ref-fp32 ref-fp32-chunked)
  kda_golden_exit_test(verify_imported_${kernel} 0 "4 cases, 4 passed, 0 failed"
                       ${oracle} golden verify --golden ${imported} --kernel ${kernel})
  set_tests_properties(golden.verify_imported_${kernel} PROPERTIES FIXTURES_REQUIRED golden_imported)
endforeach()
kda_golden_exit_test(import_twice 2 "already holds a case 'verify_table'"
                     ${oracle} golden import ${calls}/verify_table.json --out ${imported} --append)
set_tests_properties(golden.import_twice PROPERTIES FIXTURES_REQUIRED golden_imported)
kda_golden_exit_test(import_bad_call 2 "CMakeLists.txt': not valid JSON"
                     ${oracle} golden import ${CMAKE_CURRENT_SOURCE_DIR}/CMakeLists.txt --out bad.h5)

# check --around: the catalogue on cases drawn around an imported call; an invalid call seeds nothing.
kda_golden_exit_test(check_around_varlen_prefill 0 "--around .*matches-reference +10 +10 +0.*packing +10 +10 +0"
                     ${oracle} check --kernel ref-fp32-chunked --around ${calls}/varlen_prefill.json
                     --properties matches-reference,packing --cases 10)
kda_golden_exit_test(check_around_invalid_call 2 "breaks cu_seqlens_monotonic.*only a valid call seeds cases"
                     ${oracle} check --around ${calls}/decreasing_cu_seqlens.json --cases 1)
