# Sourced by .ci/run: the one way the test command installs a tool it needs
# from Debian (ffmpeg, the Python capture's packages, chromium).
#
# debian_install WHAT [APT-OPTION...] PACKAGE...
#
# installs the Debian packages with apt-get (update, then install -y), as
# root or through sudo without a password. It is called only when WHAT is
# missing. When it cannot install (neither root nor sudo, or no apt-get), it
# says so, naming the packages to install, and returns 0: the tests that
# need WHAT then fail, saying the same. A failing apt-get stops .ci/run (set
# -e), as any failing step does.
debian_install() {
	local what=$1
	shift
	local pkgs=() a
	for a in "$@"; do
		case $a in -*) ;; *) pkgs+=("$a") ;; esac
	done
	local as_root
	if [ "$(id -u)" = 0 ]; then
		as_root=
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		as_root=sudo
	else
		echo "-- $what is missing and cannot be installed here (not root, no sudo without a password): install Debian's ${pkgs[*]} as root"
		return 0
	fi
	if ! command -v apt-get >/dev/null; then
		echo "-- $what is missing and cannot be installed here (no apt-get): install ${pkgs[*]}"
		return 0
	fi
	echo "-- installing ${pkgs[*]}"
	$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
