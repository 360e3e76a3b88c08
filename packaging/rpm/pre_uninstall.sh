# Erase (not upgrade): stop and disable the service (%systemd_preun).
if [ "$1" -eq 0 ] && [ -d /run/systemd/system ]; then
    systemctl --no-reload disable --now pausewatch.service || :
fi
