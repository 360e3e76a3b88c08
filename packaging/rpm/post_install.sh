# The user and the state directory from the files the package ships, then
# systemd's preset for a first install (the %systemd_post of a spec file).
systemd-sysusers /usr/lib/sysusers.d/pausewatch.conf
systemd-tmpfiles --create /usr/lib/tmpfiles.d/pausewatch.conf
if [ "$1" -eq 1 ] && [ -d /run/systemd/system ]; then
    systemctl --no-reload preset pausewatch.service || :
fi
