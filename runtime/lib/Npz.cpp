//===- Npz.cpp - .npz archives (zip files of .npy members) ----------------===//
//
// Reading: the central directory (found through the end of central
// directory record, ZIP64 records and extra fields included), then a
// member's local header and data, stored (method 0) or deflated (method 8,
// through zlib), CRC-32 checked. Writing: stored members, ZIP64 records
// where sizes or offsets need them. Format reference: PKWARE's APPNOTE.TXT.
//
//===----------------------------------------------------------------------===//

#include "ArrayFile.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

using namespace dtrain::rt;

namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kMethodStored = 0, kMethodDeflate = 8;
constexpr uint32_t kSaturated32 = 0xffffffff;
constexpr uint16_t kSaturated16 = 0xffff;

std::atomic<uint64_t> zip64Limit{0x7fffffff};

/// Bounds-checked little-endian fields of a record held in memory.
class Fields {
public:
  Fields(const unsigned char *data, size_t size, const char *what)
      : p_(data), n_(size), what_(what) {}
  uint64_t get(int bytes) {
    need(size_t(bytes));
    uint64_t v = readLE(p_ + pos_, bytes);
    pos_ += size_t(bytes);
    return v;
  }
  uint16_t u16() { return uint16_t(get(2)); }
  uint32_t u32() { return uint32_t(get(4)); }
  uint64_t u64() { return get(8); }
  std::string_view bytes(size_t n) {
    need(n);
    std::string_view s((const char *)p_ + pos_, n);
    pos_ += n;
    return s;
  }
  size_t left() const { return n_ - pos_; }

private:
  void need(size_t n) const {
    if (n > n_ - pos_)
      fail("corrupt zip archive: truncated %s", what_);
  }
  const unsigned char *p_;
  size_t n_, pos_ = 0;
  const char *what_;
};

struct ZipEntry {
  std::string name;
  uint16_t flags, method;
  uint32_t crc;
  uint64_t compressedSize, size, localOffset;
};

/// The entries of the central directory of ZIP, in archive order.
std::vector<ZipEntry> readDirectory(const InputFile &zip) {
  const uint64_t fileSize = zip.size();
  if (fileSize < 22)
    fail("not a zip archive (%llu bytes; a .npz file is a zip archive)",
         (unsigned long long)fileSize);
  // The end of central directory record: 22 bytes and a comment of up to
  // 64 KiB, at the very end.
  const size_t tailSize = size_t(std::min<uint64_t>(fileSize, 22 + 0xffff));
  std::vector<unsigned char> tail(tailSize);
  zip.readAt(fileSize - tailSize, tail.data(), tailSize);
  size_t at = tailSize - 22 + 1;
  while (at-- > 0)
    if (readLE(&tail[at], 4) == kEndSig &&
        at + 22 + readLE(&tail[at + 20], 2) <= tailSize)
      break;
  if (at > tailSize)
    fail("not a zip archive (no end of central directory record; a .npz "
         "file is a zip archive)");
  const uint64_t endPos = fileSize - tailSize + at;
  Fields end(&tail[at + 4], 18, "end of central directory record");
  const uint16_t disk = end.u16(), directoryDisk = end.u16();
  end.u16(); // entries on this disk
  uint64_t entries = end.u16();
  uint64_t directorySize = end.u32(), directoryOffset = end.u32();
  if (disk != 0 || directoryDisk != 0)
    fail("multi-disk zip archives are not supported");

  uint64_t directoryEnd = endPos;
  unsigned char locator[20];
  bool zip64 = false;
  if (endPos >= 20) {
    zip.readAt(endPos - 20, locator, 20);
    zip64 = readLE(locator, 4) == kZip64LocatorSig;
  }
  if (zip64) {
    const uint64_t recordPos = readLE(locator + 8, 8);
    if (recordPos > endPos - 20 || endPos - 20 - recordPos < 56)
      fail("corrupt zip archive: bad ZIP64 end of central directory "
           "locator");
    unsigned char record[56];
    zip.readAt(recordPos, record, 56);
    if (readLE(record, 4) != kZip64EndSig)
      fail("corrupt zip archive: no ZIP64 end of central directory record "
           "where its locator points");
    Fields r(record + 16, 40, "ZIP64 end of central directory record");
    const uint32_t disk64 = r.u32(), directoryDisk64 = r.u32();
    r.u64(); // entries on this disk
    entries = r.u64();
    directorySize = r.u64();
    directoryOffset = r.u64();
    if (disk64 != 0 || directoryDisk64 != 0)
      fail("multi-disk zip archives are not supported");
    directoryEnd = recordPos;
  } else if (entries == kSaturated16 || directorySize == kSaturated32 ||
             directoryOffset == kSaturated32) {
    fail("corrupt zip archive: ZIP64 end of central directory locator "
         "missing");
  }
  if (directoryOffset > directoryEnd ||
      directorySize > directoryEnd - directoryOffset)
    fail("corrupt zip archive: the central directory (%llu bytes at offset "
         "%llu) is not inside the %llu-byte file",
         (unsigned long long)directorySize, (unsigned long long)directoryOffset,
         (unsigned long long)fileSize);
  if (entries > directorySize / 46)
    fail("corrupt zip archive: %llu entries cannot fit in a %llu-byte "
         "central directory",
         (unsigned long long)entries, (unsigned long long)directorySize);

  std::vector<unsigned char> directory(size_t(directorySize) + 1);
  zip.readAt(directoryOffset, directory.data(), size_t(directorySize));
  Fields d(directory.data(), size_t(directorySize), "central directory");
  std::vector<ZipEntry> result;
  result.reserve(size_t(entries));
  for (uint64_t i = 0; i < entries; ++i) {
    if (d.u32() != kCentralHeaderSig)
      fail("corrupt zip archive: bad central directory entry %llu",
           (unsigned long long)i);
    ZipEntry e;
    d.u16(); // version made by
    d.u16(); // version needed
    e.flags = d.u16();
    e.method = d.u16();
    d.u32(); // time, date
    e.crc = d.u32();
    e.compressedSize = d.u32();
    e.size = d.u32();
    const uint16_t nameLength = d.u16(), extraLength = d.u16(),
                   commentLength = d.u16();
    d.u16(); // disk number start
    d.u16(); // internal attributes
    d.u32(); // external attributes
    e.localOffset = d.u32();
    e.name = std::string(d.bytes(nameLength));
    Fields extra(
        reinterpret_cast<const unsigned char *>(d.bytes(extraLength).data()),
        extraLength, "extra field");
    d.bytes(commentLength);
    // The ZIP64 extra field holds, in this order, the 64-bit values of
    // those fields that are saturated in the header.
    while (extra.left() >= 4) {
      const uint16_t id = extra.u16(), length = extra.u16();
      std::string_view body = extra.bytes(length);
      if (id != kZip64ExtraId)
        continue;
      Fields z(reinterpret_cast<const unsigned char *>(body.data()), length,
               "ZIP64 extra field");
      if (e.size == kSaturated32)
        e.size = z.u64();
      if (e.compressedSize == kSaturated32)
        e.compressedSize = z.u64();
      if (e.localOffset == kSaturated32)
        e.localOffset = z.u64();
    }
    result.push_back(std::move(e));
  }
  return result;
}

/// The member named by the user: NAME + ".npy" or else NAME; the last one
/// when names repeat (as Python's zipfile).
const ZipEntry *findMember(const std::vector<ZipEntry> &entries,
                           const std::string &name) {
  for (const std::string &candidate : {name + ".npy", name})
    for (auto it = entries.rbegin(); it != entries.rend(); ++it)
      if (it->name == candidate)
        return &*it;
  return nullptr;
}

/// The key of a member, as np.load(...).files shows it.
std::string keyOf(const std::string &member) {
  const size_t n = member.size();
  return n > 4 && member.compare(n - 4, 4, ".npy") == 0
             ? member.substr(0, n - 4)
             : member;
}

/// The uncompressed bytes of a deflated member, inflated as they are read.
class InflateSource : public ByteSource {
public:
  InflateSource(FileRange &compressed, uint64_t size)
      : in_(compressed), declared_(size), left_(size) {
    if (inflateInit2(&z_, -MAX_WBITS) != Z_OK) // raw deflate, as zip has it
      fail("zlib: cannot initialize inflate");
  }
  ~InflateSource() override { inflateEnd(&z_); }

  uint64_t remaining() const override { return left_; }

  void read(void *dst, size_t n) override {
    if (n > left_)
      fail("unexpected end of data (%zu bytes wanted, %llu left)", n,
           (unsigned long long)left_);
    unsigned char *p = static_cast<unsigned char *>(dst);
    size_t done = 0;
    while (done < n) {
      if (ended_)
        fail("corrupt member: the deflate data ends after %llu of the %llu "
             "bytes declared",
             (unsigned long long)(declared_ - left_ + done),
             (unsigned long long)declared_);
      const uInt chunk = uInt(std::min<size_t>(n - done, size_t(1) << 30));
      z_.next_out = p + done;
      z_.avail_out = chunk;
      step();
      done += chunk - z_.avail_out;
    }
    crc_ = updateCrc32(crc_, dst, n);
    left_ -= n;
  }

  /// Checks that the deflate stream ends where the declared size does.
  void finish() {
    while (!ended_) {
      unsigned char extra;
      z_.next_out = &extra;
      z_.avail_out = 1;
      step();
      if (z_.avail_out == 0)
        fail("corrupt member: the deflate data holds more than the %llu "
             "bytes declared",
             (unsigned long long)declared_);
    }
  }

  uint32_t crc() const { return crc_; }

private:
  /// One call of inflate, refilling the input first when it is empty.
  void step() {
    if (z_.avail_in == 0 && in_.remaining() > 0) {
      buffer_.resize(size_t(std::min<uint64_t>(in_.remaining(), 1 << 16)));
      in_.read(buffer_.data(), buffer_.size());
      z_.next_in = buffer_.data();
      z_.avail_in = uInt(buffer_.size());
    }
    const int rc = inflate(&z_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END)
      ended_ = true;
    else if (rc == Z_BUF_ERROR && z_.avail_in == 0 && in_.remaining() == 0)
      fail("corrupt member: the deflate data is truncated");
    else if (rc != Z_OK)
      fail("corrupt member: bad deflate data (zlib: %s)",
           z_.msg ? z_.msg : zError(rc));
  }

  FileRange &in_;
  const uint64_t declared_;
  uint64_t left_;
  z_stream z_{};
  std::vector<unsigned char> buffer_;
  bool ended_ = false;
  uint32_t crc_ = 0;
};

struct ArrayGuard {
  dtrain_rt_array_t array{};
  ~ArrayGuard() { dtrain_rt_array_free(&array); }
};

/// Reads member E of ZIP into OUT; failures do not name the member.
void readMember(const InputFile &zip, const ZipEntry &e,
                dtrain_rt_array_t *out) {
  if (e.flags & 1)
    fail("encrypted members are not supported");
  if (e.method != kMethodStored && e.method != kMethodDeflate)
    fail("compression method %u is not supported (accepted: 0 = stored, "
         "8 = deflate)",
         e.method);
  const uint64_t fileSize = zip.size();
  unsigned char local[30];
  if (e.localOffset > fileSize || fileSize - e.localOffset < 30)
    fail("corrupt zip archive: the local header offset %llu is past the end "
         "of the file",
         (unsigned long long)e.localOffset);
  zip.readAt(e.localOffset, local, 30);
  if (readLE(local, 4) != kLocalHeaderSig)
    fail("corrupt zip archive: no local header at offset %llu",
         (unsigned long long)e.localOffset);
  const uint64_t dataBegin =
      e.localOffset + 30 + readLE(local + 26, 2) + readLE(local + 28, 2);
  if (dataBegin > fileSize || e.compressedSize > fileSize - dataBegin)
    fail("truncated: the member's %llu bytes at offset %llu extend past the "
         "end of the %llu-byte file",
         (unsigned long long)e.compressedSize, (unsigned long long)dataBegin,
         (unsigned long long)fileSize);
  FileRange raw(zip, dataBegin, dataBegin + e.compressedSize);
  ArrayGuard array;
  uint32_t crc;
  if (e.method == kMethodStored) {
    if (e.compressedSize != e.size)
      fail("corrupt zip archive: a stored member of %llu bytes declares %llu "
           "uncompressed bytes",
           (unsigned long long)e.compressedSize, (unsigned long long)e.size);
    readNpy(raw, &array.array);
    crc = raw.crc();
  } else {
    // Deflate expands at most 1032:1; a larger claim is a lie that would
    // only make readNpy allocate memory for nothing.
    if (e.size / 1032 > e.compressedSize + 1)
      fail("corrupt member: %llu bytes declared for %llu bytes of deflate "
           "data",
           (unsigned long long)e.size, (unsigned long long)e.compressedSize);
    InflateSource inflated(raw, e.size);
    readNpy(inflated, &array.array);
    inflated.finish();
    crc = inflated.crc();
  }
  if (crc != e.crc)
    fail("CRC-32 mismatch (the archive says %08x, the data is %08x): the "
         "file is corrupt",
         e.crc, crc);
  *out = array.array;
  array.array = dtrain_rt_array_t{};
}

//===--- Writing ----------------------------------------------------------===//

/// A record being assembled in memory.
struct Record {
  std::vector<unsigned char> bytes;
  void put(uint64_t v, int n) {
    bytes.resize(bytes.size() + size_t(n));
    writeLE(&bytes[bytes.size() - size_t(n)], v, n);
  }
  void put(const std::string &s) {
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
};

struct WrittenMember {
  std::string name;
  uint64_t offset, size;
  uint32_t crc;
};

constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1; // 1980-01-01 00:00

uint16_t flagsFor(const std::string &name) {
  // Bit 11: the name is UTF-8 (set only when it is not plain ASCII).
  for (unsigned char c : name)
    if (c >= 0x80)
      return 1 << 11;
  return 0;
}

/// Writes one stored member at the current position of FILE.
WrittenMember writeMember(OutputFile &file, const std::string &name,
                          const dtrain_rt_array_t &array, uint64_t size) {
  WrittenMember m{name, file.position(), size, 0};
  const bool zip64 = size > zip64Limit;
  Record local;
  local.put(kLocalHeaderSig, 4);
  local.put(zip64 ? 45 : 20, 2); // version needed
  local.put(flagsFor(name), 2);
  local.put(kMethodStored, 2);
  local.put(0, 2); // time
  local.put(kDosDate, 2);
  local.put(0, 4); // CRC-32, patched below
  local.put(zip64 ? kSaturated32 : size, 4);
  local.put(zip64 ? kSaturated32 : size, 4);
  local.put(name.size(), 2);
  local.put(zip64 ? 20 : 0, 2);
  local.put(name);
  if (zip64) {
    local.put(kZip64ExtraId, 2);
    local.put(16, 2);
    local.put(size, 8);
    local.put(size, 8);
  }
  file.write(local.bytes.data(), local.bytes.size());
  CountingSink data(file);
  writeNpy(data, array);
  if (data.count() != size)
    fail("internal error: wrote %llu bytes for a %llu-byte member",
         (unsigned long long)data.count(), (unsigned long long)size);
  m.crc = data.crc();
  unsigned char crc[4];
  writeLE(crc, m.crc, 4);
  file.writeAt(m.offset + 14, crc, 4);
  return m;
}

void writeDirectory(OutputFile &file,
                    const std::vector<WrittenMember> &members) {
  const uint64_t directoryOffset = file.position();
  Record d;
  for (const WrittenMember &m : members) {
    const bool bigSize = m.size > zip64Limit, bigOffset = m.offset > zip64Limit;
    Record extra;
    if (bigSize) {
      extra.put(m.size, 8);
      extra.put(m.size, 8);
    }
    if (bigOffset)
      extra.put(m.offset, 8);
    d.put(kCentralHeaderSig, 4);
    d.put(3 << 8 | 45, 2); // made by: Unix, version 4.5
    d.put(bigSize || bigOffset ? 45 : 20, 2);
    d.put(flagsFor(m.name), 2);
    d.put(kMethodStored, 2);
    d.put(0, 2); // time
    d.put(kDosDate, 2);
    d.put(m.crc, 4);
    d.put(bigSize ? kSaturated32 : m.size, 4);
    d.put(bigSize ? kSaturated32 : m.size, 4);
    d.put(m.name.size(), 2);
    d.put(extra.bytes.empty() ? 0 : extra.bytes.size() + 4, 2);
    d.put(0, 2);           // comment length
    d.put(0, 2);           // disk number start
    d.put(0, 2);           // internal attributes
    d.put(0644u << 16, 4); // external attributes: -rw-r--r--
    d.put(bigOffset ? kSaturated32 : m.offset, 4);
    d.put(m.name);
    if (!extra.bytes.empty()) {
      d.put(kZip64ExtraId, 2);
      d.put(extra.bytes.size(), 2);
      d.bytes.insert(d.bytes.end(), extra.bytes.begin(), extra.bytes.end());
    }
  }
  const uint64_t directorySize = d.bytes.size();
  const uint64_t count = members.size();
  const bool zip64 = count >= kSaturated16 || directorySize > zip64Limit ||
                     directoryOffset > zip64Limit;
  if (zip64) {
    const uint64_t recordOffset = directoryOffset + directorySize;
    d.put(kZip64EndSig, 4);
    d.put(44, 8); // size of the rest of the record
    d.put(3 << 8 | 45, 2);
    d.put(45, 2);
    d.put(0, 4); // this disk
    d.put(0, 4); // disk of the central directory
    d.put(count, 8);
    d.put(count, 8);
    d.put(directorySize, 8);
    d.put(directoryOffset, 8);
    d.put(kZip64LocatorSig, 4);
    d.put(0, 4); // disk of the ZIP64 record
    d.put(recordOffset, 8);
    d.put(1, 4); // total disks
  }
  d.put(kEndSig, 4);
  d.put(0, 2);
  d.put(0, 2);
  d.put(zip64 ? kSaturated16 : count, 2);
  d.put(zip64 ? kSaturated16 : count, 2);
  d.put(zip64 ? kSaturated32 : directorySize, 4);
  d.put(zip64 ? kSaturated32 : directoryOffset, 4);
  d.put(0, 2); // comment length
  file.write(d.bytes.data(), d.bytes.size());
}

} // namespace

void dtrain::rt::setZip64LimitForTesting(uint64_t limit) { zip64Limit = limit; }

//===--- C ABI ------------------------------------------------------------===//

extern "C" {

int dtrain_rt_npz_read(const char *path, const char *name,
                       dtrain_rt_array_t *out, char *error, size_t errorSize) {
  const std::string context = path ? path : "dtrain_rt_npz_read";
  if (out)
    *out = dtrain_rt_array_t{};
  return runGuarded(context, error, errorSize, [&] {
    if (!path || !name || !out)
      fail("%s is NULL", !path ? "path" : !name ? "name" : "out");
    InputFile zip(path);
    const std::vector<ZipEntry> entries = readDirectory(zip);
    const ZipEntry *member = findMember(entries, name);
    if (!member) {
      std::string present;
      for (size_t i = 0; i < entries.size() && i < 16; ++i)
        present += (i ? ", " : "") + quoted(keyOf(entries[i].name));
      if (entries.size() > 16)
        present += ", ...";
      fail("no array %s in the archive (it holds: %s)", quoted(name).c_str(),
           entries.empty() ? "nothing" : present.c_str());
    }
    try {
      readMember(zip, *member, out);
    } catch (Failure &f) {
      f.message = "member " + quoted(member->name) + ": " + f.message;
      throw;
    }
  });
}

int dtrain_rt_npz_names(const char *path, char ***names, int32_t *count,
                        char *error, size_t errorSize) {
  const std::string context = path ? path : "dtrain_rt_npz_names";
  if (names)
    *names = nullptr;
  if (count)
    *count = 0;
  return runGuarded(context, error, errorSize, [&] {
    if (!path || !names)
      fail("%s is NULL", path ? "names" : "path");
    InputFile zip(path);
    const std::vector<ZipEntry> entries = readDirectory(zip);
    if (entries.size() > size_t(INT32_MAX - 1))
      fail("too many members (%zu)", entries.size());
    char **list =
        static_cast<char **>(std::calloc(entries.size() + 1, sizeof(char *)));
    if (!list)
      throw std::bad_alloc();
    for (size_t i = 0; i < entries.size(); ++i) {
      list[i] = strdup(keyOf(entries[i].name).c_str());
      if (!list[i]) {
        dtrain_rt_npz_names_free(list);
        throw std::bad_alloc();
      }
    }
    *names = list;
    if (count)
      *count = int32_t(entries.size());
  });
}

void dtrain_rt_npz_names_free(char **names) {
  if (!names)
    return;
  for (char **p = names; *p; ++p)
    std::free(*p);
  std::free(names);
}

int dtrain_rt_npz_write(const char *path, int32_t count,
                        const char *const *names,
                        const dtrain_rt_array_t *arrays, char *error,
                        size_t errorSize) {
  const std::string context = path ? path : "dtrain_rt_npz_write";
  return runGuarded(context, error, errorSize, [&] {
    if (!path)
      fail("path is NULL");
    if (count < 0)
      fail("cannot write: count is %d (accepted: count >= 0)", count);
    if (count > 0 && (!names || !arrays))
      fail("cannot write: %s is NULL with count %d", names ? "arrays" : "names",
           count);
    // Check everything before creating the file.
    std::vector<uint64_t> sizes(static_cast<size_t>(count));
    std::set<std::string> seen;
    for (int32_t i = 0; i < count; ++i) {
      if (!names[i] || !*names[i])
        fail("cannot write: name %d is %s", i, names[i] ? "empty" : "NULL");
      const std::string member = std::string(names[i]) + ".npy";
      if (member.size() > 0xffff)
        fail("cannot write: name %d is too long (%zu bytes)", i, member.size());
      if (!seen.insert(member).second)
        fail("cannot write: the name %s appears twice",
             quoted(names[i]).c_str());
      try {
        sizes[size_t(i)] = npySize(&arrays[i]);
      } catch (Failure &f) {
        f.message = "member " + quoted(member) + ": " + f.message;
        throw;
      }
    }
    OutputFile file(path);
    std::vector<WrittenMember> members;
    for (int32_t i = 0; i < count; ++i)
      members.push_back(writeMember(file, std::string(names[i]) + ".npy",
                                    arrays[i], sizes[size_t(i)]));
    writeDirectory(file, members);
    file.commit();
  });
}

} // extern "C"
