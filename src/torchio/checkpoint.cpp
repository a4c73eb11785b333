// Opening a torch.save zip: locate <prefix>/data.pkl, check byte order, run
// the pickle with storages resolved from <prefix>/data/<key>.
#include "torchio/checkpoint.h"

#include "core/error.h"

namespace oscar::torchio {

Checkpoint Checkpoint::parse(std::span<const uint8_t> bytes, const std::string& name) {
  // torch.save before 1.6 (or with _use_new_zipfile_serialization=False)
  // writes a bare pickle stream starting with a magic number; say so rather
  // than "not a zip".
  if (bytes.size() >= 2 && bytes[0] == 0x80 && bytes[1] == 0x02)
    throw Error(name + ": legacy (non-zip) torch.save format is not supported; re-save it with torch >= 1.6");
  ZipArchive zip = ZipArchive::parse(bytes, name);

  const ZipEntry* pkl = nullptr;
  for (const ZipEntry& e : zip.entries()) {
    const std::string& n = e.name;
    const bool top = n == "data.pkl";
    const bool one_deep = n.size() > 9 && n.compare(n.size() - 9, 9, "/data.pkl") == 0 &&
                          n.find('/') == n.size() - 9;
    if (!top && !one_deep) continue;
    if (pkl) throw Error(name + ": archive holds more than one data.pkl");
    pkl = &e;
  }
  if (!pkl) throw Error(name + ": zip archive has no data.pkl; not a torch.save checkpoint");

  Checkpoint ck;
  ck.name_ = name;
  ck.prefix_ = pkl->name.substr(0, pkl->name.size() - 8);
  if (const ZipEntry* bo = zip.find(ck.prefix_ + "byteorder")) {
    auto d = zip.data(*bo);
    std::string order(d.begin(), d.end());
    if (order != "little")
      throw Error(name + ": checkpoint byte order is '" + order.substr(0, 16) + "'; only little-endian is supported");
  }
  ck.root_ = parse_pickle(zip.data(*pkl), &zip, ck.prefix_, name);
  return ck;
}

Checkpoint Checkpoint::open(const std::string& path) {
  MappedFile map(path);
  Checkpoint ck = parse(map.bytes(), path);
  ck.map_ = std::move(map);  // the mapping's address is unchanged by the move
  return ck;
}

}  // namespace oscar::torchio
