/* Declarations of the elfutils calls DeepGEMM's deep_jit loads with dlopen
   (for its stack traces), for a build on a machine without libdw-dev. Only
   the types and signatures it names; measurement use only, not fp8gen code. */
#pragma once
#include <stdint.h>
#include <sys/types.h>
typedef uint64_t Dwarf_Addr;
typedef uint64_t GElf_Addr;
typedef uint32_t GElf_Word;
typedef struct Dwfl Dwfl;
typedef struct Dwfl_Module Dwfl_Module;
typedef struct Dwfl_Line Dwfl_Line;
typedef struct {
  int (*find_elf)(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, void**);
  int (*find_debuginfo)(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word, char**);
  void* section_address;
  char** debuginfo_path;
} Dwfl_Callbacks;
#ifdef __cplusplus
extern "C" {
#endif
Dwfl* dwfl_begin(const Dwfl_Callbacks*);
int dwfl_linux_proc_report(Dwfl*, pid_t);
int dwfl_report_end(Dwfl*, int (*)(Dwfl_Module*, void*, const char*, Dwarf_Addr, void*), void*);
Dwfl_Module* dwfl_addrmodule(Dwfl*, Dwarf_Addr);
const char* dwfl_module_addrname(Dwfl_Module*, GElf_Addr);
Dwfl_Line* dwfl_module_getsrc(Dwfl_Module*, Dwarf_Addr);
const char* dwfl_lineinfo(Dwfl_Line*, Dwarf_Addr*, int*, int*, int*, GElf_Word*);
int dwfl_linux_proc_find_elf(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, void**);
#ifdef __cplusplus
}
#endif
