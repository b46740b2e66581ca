#!/usr/bin/env bash
# HammerDB 4.12 on Debian 12 for bench/vs_hammerdb.py: unpacks the tag into DIR (outside this
# checkout: HammerDB is GPLv3 and none of it belongs here) and adds three small shims of ours
# that let it run on Debian's Tcl 8.6 packages. About a minute, as root.
#
#   bash bench/hammerdb_setup.sh GITDIR DIR
#
# GITDIR: a git directory of github.com/TPC-Council/HammerDB that holds tag v4.12 (a clone, or
# a mirror; only the folders the CLI needs are archived, since a partial copy may lack blobs
# under Build/: git may still name one such blob as invalid, which does no harm here). Then pass --hammerdb DIR to the bench scripts, or set HAMMERDB_HOME=DIR.
#
# Why each shim:
# 1. HammerDB 4.12's CLI requires the chart package 'ticklecharts' at start; no chart is drawn
#    here, so an empty package of that name does.
# 2. Its MariaDB workload loads 'mariatcl', HammerDB's renamed mysqltcl; Debian has mysqltcl:
#    every maria* command is made an alias of its mysql* twin.
# 3. Debian's Pgtcl 2.7.7 converts SQL text and statement names through one static buffer
#    shared by all threads, so with several virtual-user threads statement names get swapped
#    or cut ("prepared statement \"paymen\" does not exist"); it also lacks pg_notice_handler
#    and takes no result/argument formats in pg_exec_prepared. The shim sends prepared
#    statements by pg_sendquery_prepared (which skips that buffer) and serialises the rest.
set -euo pipefail
G=${1:?usage: hammerdb_setup.sh GITDIR DIR}
H=${2:?usage: hammerdb_setup.sh GITDIR DIR}
export DEBIAN_FRONTEND=noninteractive
need=()
for pkg in tcl8.6 tcl-thread libsqlite3-tcl libpgtcl mysqltcl; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi
mkdir -p "$H"
git --git-dir="$G" archive v4.12 agent config hammerdb hammerdbcli hammerdbws modules scripts src images \
  ChangeLog LICENSE README.md | tar -x -C "$H"
cd "$H"
mkdir -p bin lib/pgtclshim lib/mariatcl tmp
# hammerdbcli runs ./bin/tclsh8.6; Tcl then searches $H/lib before Debian's package folders
ln -sf /usr/bin/tclsh8.6 bin/tclsh8.6
printf 'package provide ticklecharts 3.2.0\n' > modules/ticklecharts-3.2.0.tm
printf 'package ifneeded mariatcl 3.052 [list source [file join $dir mariatcl.tcl]]\n' > lib/mariatcl/pkgIndex.tcl
cat > lib/mariatcl/mariatcl.tcl <<'TCL'
package require mysqltcl
foreach c {connect use escape sel next seek map exec close info result col state insertid query endquery baseinfo ping changeuser receive} {
    interp alias {} ::maria$c {} ::mysql$c
}
namespace eval ::maria {}
foreach c [info commands ::mysql::*] { interp alias {} ::maria::[namespace tail $c] {} $c }
upvar #0 ::mysqlstatus ::mariastatus
package provide mariatcl 3.052
TCL
printf 'package ifneeded Pgtcl 2.7.7 [list source [file join $dir pgtclshim.tcl]]\n' > lib/pgtclshim/pkgIndex.tcl
cat > lib/pgtclshim/pgtclshim.tcl <<'TCL'
load [glob /usr/lib/tcltk/*/pgtcl2.7/libpgtcl2.7.7.so] Pgtcl
package require Thread
proc ::pg_notice_handler {conn args} { return "" }
# pg_exec_prepared conn stmt resultFormats argFormats ?arg ...?, as HammerDB calls it
proc ::pg_exec_prepared {conn stmt rfmt afmt args} {
    pg_sendquery_prepared $conn $stmt {*}$args
    set res [pg_getresult $conn]
    while {[set more [pg_getresult $conn]] ne ""} { pg_result $res -clear; set res $more }
    return $res
}
# everything else that goes through the shared buffer takes one process-wide mutex
tsv::lock pgtclshim { if {![tsv::exists pgtclshim mutex]} { tsv::set pgtclshim mutex [thread::mutex create -recursive] } }
set ::pgtclshim_mutex [tsv::get pgtclshim mutex]
foreach cmd {pg_exec pg_select pg_result pg_execute} {
    rename ::$cmd ::${cmd}_277
    proc ::$cmd args [string map [list @C ${cmd}_277] {
        if {[lindex $args 1] in {-status -clear}} { return [::@C {*}$args] }
        thread::mutex lock $::pgtclshim_mutex
        try { return [uplevel 1 [list ::@C {*}$args]] } finally { thread::mutex unlock $::pgtclshim_mutex }
    }]
}
TCL
echo 'puts "packages: [package require Pgtcl] [package require mariatcl]"; exit' > tmp/smoke.tcl
TMP="$H/tmp" ./hammerdbcli auto tmp/smoke.tcl | grep packages:
echo "HammerDB 4.12 is in $H: pass --hammerdb $H or set HAMMERDB_HOME=$H"
