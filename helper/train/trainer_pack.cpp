// See trainer_pack.hpp. The pack is linked in with .incbin (FERRY_TRAIN_PACK_FILE, set by CMake,
// which also makes this object depend on the file).
#include "helper/train/trainer_pack.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/sha256.hpp"

// ELF's read-only data and its section stack; PE/COFF (Windows) names the section .rdata and has
// no stack, so the assembler is put back in .text, where the compiler left it before this asm.
#ifdef __ELF__
#define FERRY_PACK_SECTION ".section .rodata\n"
#define FERRY_PACK_SECTION_END ".previous\n"
#else
#define FERRY_PACK_SECTION ".section .rdata,\"dr\"\n"
#define FERRY_PACK_SECTION_END ".text\n"
#endif
asm(FERRY_PACK_SECTION
    ".balign 16\n"
    ".global ferry_trainer_pack_begin\n"
    "ferry_trainer_pack_begin:\n"
    ".incbin \"" FERRY_TRAIN_PACK_FILE "\"\n"
    ".global ferry_trainer_pack_end\n"
    "ferry_trainer_pack_end:\n"
    FERRY_PACK_SECTION_END);
extern "C" const char ferry_trainer_pack_begin[];
extern "C" const char ferry_trainer_pack_end[];

namespace ferry::training {

std::expected<TrainerPack, std::string> trainer_pack() {
  TrainerPack pack;
  if (const char* file = std::getenv("FERRY_TRAIN_PACK"); file && *file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return std::unexpected(std::string("$FERRY_TRAIN_PACK='") + file + "' cannot be read (unset it to use the built-in trainer sources)");
    std::ostringstream ss;
    ss << in.rdbuf();
    pack.bytes = ss.str();
    pack.origin = file;
  } else {
    pack.bytes.assign(ferry_trainer_pack_begin, ferry_trainer_pack_end);
    pack.origin = "built in";
  }
  if (pack.bytes.size() < 2 || static_cast<unsigned char>(pack.bytes[0]) != 0x1f || static_cast<unsigned char>(pack.bytes[1]) != 0x8b)
    return std::unexpected("the trainer source pack (" + pack.origin + ") is not a .tar.gz");
  pack.sha256 = sha256_hex(pack.bytes);
  return pack;
}

}  // namespace ferry::training
