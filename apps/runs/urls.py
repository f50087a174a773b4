app_name = "runs"

urlpatterns = []
