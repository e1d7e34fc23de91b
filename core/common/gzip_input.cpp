// gzip'd inputs inflated under the input cap (see gzip_input.hpp).
#include "core/common/gzip_input.hpp"
#include "core/common/file_io.hpp"

#include <zlib.h>

#include <algorithm>
#include <vector>

namespace tp::io {

bool is_gzip(const std::string& data)
{
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f && static_cast<unsigned char>(data[1]) == 0x8b;
}

Result<std::string> gunzip_capped(const std::string& data, const std::string& path, const std::string& what,
                                  uint64_t cap)
{
  const std::string limit = " (the limit is TENSORPATH_MAX_INPUT_BYTES, in bytes)";
  const std::string hint = "; check it with `gzip -t`, or give the uncompressed file";
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) // 15 + 16: a gzip header and trailer, the largest window
    return Error::at(path, "", "a gzip'd " + what, "zlib could not start");
  std::string out;
  std::vector<char> buf(1 << 16);
  size_t at = 0; // bytes of `data` consumed
  auto fail = [&](const std::string& expected, const std::string& got) {
    inflateEnd(&z);
    return Error::at(path, "gzip data", expected, got);
  };
  while (true) {
    const size_t chunk = std::min<size_t>(data.size() - at, 1u << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + at));
    z.avail_in = uInt(chunk);
    int rc = Z_OK;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf.data());
      z.avail_out = uInt(buf.size());
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR)
        return fail("a complete, uncorrupted gzip'd " + what + hint,
                    "corrupt data at compressed byte " + std::to_string(at + (chunk - z.avail_in)) + " (" +
                        (z.msg ? z.msg : "zlib error " + std::to_string(rc)) + ")");
      const size_t n = buf.size() - z.avail_out;
      if (out.size() + n > cap) {
        inflateEnd(&z);
        return Error::at(path, "", "a " + what + " of at most " + std::to_string(cap) + " bytes once inflated" + limit,
                         "more (inflating stopped there: a gzip bomb?)");
      }
      out.append(buf.data(), n);
    } while (rc != Z_STREAM_END && (z.avail_in > 0 || z.avail_out == 0) && rc != Z_BUF_ERROR);
    at += chunk - z.avail_in;
    if (rc == Z_STREAM_END) {
      if (at == data.size()) break;
      // another member (`cat a.gz b.gz`), or padding: zeros after the last member are ignored, as gzip does
      if (std::all_of(data.begin() + long(at), data.end(), [](char c) { return c == 0; })) break;
      if (!is_gzip(data.substr(at, 2)))
        return fail("a gzip'd " + what + " and nothing after it",
                    "other data at compressed byte " + std::to_string(at));
      inflateReset(&z);
      continue;
    }
    if (at >= data.size())
      return fail("a complete gzip'd " + what + hint, "the data ends before the gzip stream does (truncated after " +
                                                          std::to_string(data.size()) + " compressed bytes)");
  }
  inflateEnd(&z);
  return out;
}

Result<std::string> read_maybe_gzipped(const std::string& path, const std::string& what, uint64_t cap)
{
  auto raw = read_file_capped(path, what, cap);
  if (!raw.ok() || !is_gzip(raw.value())) return raw;
  return gunzip_capped(raw.value(), path, what, cap);
}

} // namespace tp::io
