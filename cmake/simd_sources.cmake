# oscar_filter_simd_sources(VAR): on x86-64, gives *_avx2.cpp, *_avx512.cpp,
# *_avx512vnni.cpp and *_avx512vbmi.cpp (VNNI + VBMI) files in VAR their
# target flags; elsewhere removes them from VAR (their
# dispatch entry points are compiled out with OSCAR_X86 undefined).
function(oscar_filter_simd_sources var)
  set(out)
  foreach(f ${${var}})
    if(f MATCHES "_avx2\\.cpp$")
      if(OSCAR_X86)
        set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
        list(APPEND out ${f})
      endif()
    elseif(f MATCHES "_avx512\\.cpp$")
      if(OSCAR_X86)
        set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS
          "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq")
        list(APPEND out ${f})
      endif()
    elseif(f MATCHES "_avx512vnni\\.cpp$")
      if(OSCAR_X86)
        set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS
          "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni")
        list(APPEND out ${f})
      endif()
    elseif(f MATCHES "_avx512vbmi\\.cpp$")
      if(OSCAR_X86)
        set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS
          "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx512vbmi")
        list(APPEND out ${f})
      endif()
    else()
      list(APPEND out ${f})
    endif()
  endforeach()
  set(${var} ${out} PARENT_SCOPE)
endfunction()
