# Rewrites the assembly `gcc -g -S -dA` makes of
# probes_uprobe_dwarf_lies_target.c so that its .debug_info lies: every
# typedef, and every pointer type that points to a pointer type, names
# itself as its type; member `far` is at offset 0x40000000 and member
# `beyond` at 6; every array has 0x80000000 elements (an int of them
# overflows an int of bytes). The DIE references gcc writes as numbers become labels,
# so that the member offsets and array bounds can grow to 4 bytes each.
# Run as: awk -f dwarf_lies.awk t.s t.s > lies.s (two passes).
function die_of(line) {
  if (!match(line, /\(DIE \(0x[0-9a-f]+\) DW_TAG_[a-z_]+\)/)) return ""
  return substr(line, RSTART + 6, RLENGTH - 7)
}
FNR == NR {   # pass 1: each DIE's tag by offset
  d = die_of($0)
  if (d != "") { split(d, p, /\) /); tag[p[1]] = p[2] }
  next
}
{
  d = die_of($0)
  if (d != "") {
    split(d, p, /\) /); cur = p[1]; curtag = p[2]; name = ""
    print ".Ldie" cur ":"
  }
}
/^\.Ldebug_info0:/ { in_info = 1 }
in_info && /^\t\.section/ { print ".Ldebug_info_end:"; in_info = 0 }
/# Length of Compilation Unit Info/ && in_info {
  print "\t.long\t.Ldebug_info_end - .Ldebug_info0 - 4"; next
}
/# DW_AT_name/ { name = $0 }
/^\t\.long\t0x[0-9a-f]+\t# DW_AT_(type|sibling)$/ {
  target = $2
  if ($0 ~ /DW_AT_type/ && curtag == "DW_TAG_typedef") target = cur
  if ($0 ~ /DW_AT_type/ && curtag == "DW_TAG_pointer_type" &&
      tag[target] == "DW_TAG_pointer_type") target = cur
  print "\t.long\t.Ldie" target " - .Ldebug_info0"; next
}
form_next { print "\t.uleb128 0x6\t# (DW_FORM_data4)"; form_next = 0; next }
/# \(DW_AT_(data_member_location|upper_bound)\)/ { form_next = 1 }
/# DW_AT_upper_bound$/ { print "\t.long\t0x7fffffff"; next }
/# DW_AT_data_member_location$/ {
  at = $2
  if (name ~ /"far/) at = "0x40000000"
  if (name ~ /"beyond/) at = "6"
  print "\t.long\t" at; next
}
{ print }
